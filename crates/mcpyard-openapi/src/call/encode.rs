//! How values are percent-encoded in URLs and forms.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};

/// Everything but the RFC 3986 unreserved characters is encoded in a value.
pub(crate) const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
