//! The context an operation is built in.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::load::refs::Location as At;
use crate::load::Resolver;
use crate::model::{DocVersion, SecurityRequirement, SecurityScheme};

/// What the whole document gives every operation.
pub(super) struct Context<'r> {
    pub(super) resolver: &'r Resolver,
    pub(super) version: DocVersion,
    pub(super) consumes: Vec<String>,
    pub(super) produces: Vec<String>,
    pub(super) security: Option<Vec<SecurityRequirement>>,
    pub(super) security_schemes: BTreeMap<String, SecurityScheme>,
    /// Output schemas by the referenced answer schema they were made from:
    /// large documents answer the same object from many operations.
    pub(super) output_schemas: RefCell<HashMap<At, Value>>,
}
