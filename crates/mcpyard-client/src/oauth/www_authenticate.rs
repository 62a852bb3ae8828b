//! (filled in next)
