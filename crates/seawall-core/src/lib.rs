//! placeholder while the vocabulary is written
