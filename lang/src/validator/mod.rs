//! Document validation for collections: the validator a collection's
//! options describe and the check writes run (`options`), and the
//! `errInfo.details` explaining a failure (`explain`).

mod explain;
mod options;

pub use options::{
    ValidationAction, ValidationLevel, Validator, order_validation_options, parse_validator,
};
