//! Python compatibility: the reference is a Python program, and its outputs depend on
//! how Python's `re` matches and how Python's `str` splits, strips and classifies text.
//! [`re`] gives the reference's patterns Python's match semantics on the linear-time
//! `regex` crate; [`text`] gives Python's whitespace, word characters and line splitting.

pub(crate) mod re;
pub mod text;
