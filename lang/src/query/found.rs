//! What a query hands back for each matching document: the document and
//! its record key. Shared by the executor and the sort that may spill.

use bson::RawDocumentBuf;

/// A matching document with its encoded `_id` (the record key).
#[derive(Debug, Clone)]
pub struct Found {
    pub id_key: Vec<u8>,
    pub doc: RawDocumentBuf,
}
