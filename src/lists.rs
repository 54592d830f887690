//! Lists of experiments that help texts and messages name, made from the registries.
