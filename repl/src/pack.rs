//! A checkpoint's files as one stream ([`Pack`]), and back: a header
//! naming each file and its size, then the files, read where they lie.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

const PACK_MAGIC: &[u8; 8] = b"ebbsnap1";

/// Files of a checkpoint that are the engine's and not its data: its
/// lock and its own diagnostic logs.
fn packed(name: &str) -> bool {
    name != "LOCK" && !name.starts_with("LOG")
}

/// A snapshot as the library moves it: received into a file, or sent
/// from a checkpoint.
pub enum SnapshotData {
    Receiving(tokio::fs::File),
    Sending(Pack),
}

/// A checkpoint's files as one stream: the header, then each file.
pub struct Pack {
    header: Vec<u8>,
    /// Each file, with where it starts in the stream and its length.
    files: Vec<(fs::File, u64, u64)>,
    len: u64,
    pos: u64,
}

impl Pack {
    /// The checkpoint in `dir`, as it is now (its files do not change).
    pub fn open(dir: &Path) -> io::Result<Pack> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file()
                && let Some(name) = entry.file_name().to_str()
                && packed(name)
            {
                names.push(name.to_owned());
            }
        }
        names.sort();
        let mut header = PACK_MAGIC.to_vec();
        header.extend_from_slice(&(names.len() as u32).to_be_bytes());
        let mut sized = Vec::with_capacity(names.len());
        for name in &names {
            let file = fs::File::open(dir.join(name))?;
            let size = file.metadata()?.len();
            header.extend_from_slice(&(name.len() as u16).to_be_bytes());
            header.extend_from_slice(name.as_bytes());
            header.extend_from_slice(&size.to_be_bytes());
            sized.push((file, size));
        }
        let mut at = header.len() as u64;
        let mut files = Vec::with_capacity(sized.len());
        for (file, size) in sized {
            files.push((file, at, size));
            at += size;
        }
        Ok(Pack {
            header,
            files,
            len: at,
            pos: 0,
        })
    }

    /// Reads from `pos` into `out`: positioned reads of the checkpoint's
    /// files, which mostly come from the page cache.
    fn read_at(&self, pos: u64, out: &mut [u8]) -> io::Result<usize> {
        if pos >= self.len || out.is_empty() {
            return Ok(0);
        }
        if let Some(rest) = self.header.get(pos as usize..)
            && !rest.is_empty()
        {
            let n = rest.len().min(out.len());
            out[..n].copy_from_slice(&rest[..n]);
            return Ok(n);
        }
        let i = self.files.partition_point(|(_, start, _)| *start <= pos) - 1;
        let (file, start, size) = &self.files[i];
        let within = pos - start;
        let want = ((size - within) as usize).min(out.len());
        let n = file.read_at(&mut out[..want], within)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "a checkpoint's file shrank while it was sent",
            ));
        }
        Ok(n)
    }
}

impl AsyncRead for Pack {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let n = this.read_at(this.pos, buf.initialize_unfilled())?;
        buf.advance(n);
        this.pos += n as u64;
        Poll::Ready(Ok(()))
    }
}

impl AsyncSeek for Pack {
    fn start_seek(self: Pin<&mut Self>, to: io::SeekFrom) -> io::Result<()> {
        let this = self.get_mut();
        let at = match to {
            io::SeekFrom::Start(n) => Some(n),
            io::SeekFrom::End(d) => this.len.checked_add_signed(d),
            io::SeekFrom::Current(d) => this.pos.checked_add_signed(d),
        };
        this.pos = at.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before a snapshot's start",
            )
        })?;
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Poll::Ready(Ok(self.pos))
    }
}

impl AsyncWrite for Pack {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, _: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Err(io::Error::other(
            "a snapshot being sent is not written",
        )))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for SnapshotData {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SnapshotData::Receiving(f) => Pin::new(f).poll_read(cx, buf),
            SnapshotData::Sending(p) => Pin::new(p).poll_read(cx, buf),
        }
    }
}

impl AsyncSeek for SnapshotData {
    fn start_seek(self: Pin<&mut Self>, to: io::SeekFrom) -> io::Result<()> {
        match self.get_mut() {
            SnapshotData::Receiving(f) => Pin::new(f).start_seek(to),
            SnapshotData::Sending(p) => Pin::new(p).start_seek(to),
        }
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        match self.get_mut() {
            SnapshotData::Receiving(f) => Pin::new(f).poll_complete(cx),
            SnapshotData::Sending(p) => Pin::new(p).poll_complete(cx),
        }
    }
}

impl AsyncWrite for SnapshotData {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            SnapshotData::Receiving(f) => Pin::new(f).poll_write(cx, buf),
            SnapshotData::Sending(p) => Pin::new(p).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SnapshotData::Receiving(f) => Pin::new(f).poll_flush(cx),
            SnapshotData::Sending(p) => Pin::new(p).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            SnapshotData::Receiving(f) => Pin::new(f).poll_shutdown(cx),
            SnapshotData::Sending(p) => Pin::new(p).poll_shutdown(cx),
        }
    }
}

/// Unpacks the pack at `pack` into the new directory `dir`.
pub(crate) fn unpack(pack: &Path, dir: &Path) -> io::Result<()> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("snapshot: {what}"));
    if dir.exists() {
        fs::remove_dir_all(dir)?;
    }
    fs::create_dir_all(dir)?;
    let mut r = io::BufReader::new(fs::File::open(pack)?);
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic != PACK_MAGIC {
        return Err(bad("not a snapshot"));
    }
    let mut n4 = [0u8; 4];
    r.read_exact(&mut n4)?;
    let mut files = Vec::new();
    for _ in 0..u32::from_be_bytes(n4) {
        let mut n2 = [0u8; 2];
        r.read_exact(&mut n2)?;
        let mut name = vec![0u8; u16::from_be_bytes(n2) as usize];
        r.read_exact(&mut name)?;
        let name = String::from_utf8(name).map_err(|_| bad("a file name is not UTF-8"))?;
        if name.is_empty() || name.contains('/') || name == "." || name == ".." || !packed(&name) {
            return Err(bad("a file name is not a checkpoint's"));
        }
        let mut n8 = [0u8; 8];
        r.read_exact(&mut n8)?;
        files.push((name, u64::from_be_bytes(n8)));
    }
    for (name, size) in files {
        let mut out = fs::File::create(dir.join(&name))?;
        if io::copy(&mut (&mut r).take(size), &mut out)? != size {
            return Err(bad("it ends early"));
        }
        out.flush()?;
        out.sync_all()?;
    }
    if r.read(&mut [0u8; 1])? != 0 {
        return Err(bad("bytes after its last file"));
    }
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncSeekExt};

    #[tokio::test]
    async fn a_pack_unpacks_to_the_files_it_was_made_of() {
        let root = tempfile::tempdir().unwrap();
        let from = root.path().join("from");
        fs::create_dir(&from).unwrap();
        fs::write(from.join("000009.sst"), vec![7u8; 100_000]).unwrap();
        fs::write(from.join("CURRENT"), b"MANIFEST-000005\n").unwrap();
        fs::write(from.join("LOCK"), b"").unwrap();
        fs::write(from.join("LOG"), b"diagnostics").unwrap();
        let mut pack = Pack::open(&from).unwrap();
        let len = pack.seek(io::SeekFrom::End(0)).await.unwrap();
        // Read in odd pieces from the middle, as chunks are sent.
        pack.seek(io::SeekFrom::Start(0)).await.unwrap();
        let mut bytes = Vec::new();
        let mut piece = vec![0u8; 3001];
        loop {
            let n = pack.read(&mut piece).await.unwrap();
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&piece[..n]);
        }
        assert_eq!(bytes.len() as u64, len);
        let packed = root.path().join("x.pack");
        fs::write(&packed, &bytes).unwrap();
        let to = root.path().join("to");
        unpack(&packed, &to).unwrap();
        let mut names: Vec<_> = fs::read_dir(&to)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["000009.sst", "CURRENT"]);
        assert_eq!(fs::read(to.join("000009.sst")).unwrap(), vec![7u8; 100_000]);

        fs::write(&packed, &bytes[..bytes.len() - 1]).unwrap();
        assert!(unpack(&packed, &to).is_err(), "a pack that ends early");
    }
}
