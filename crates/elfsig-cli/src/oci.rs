//! Container images in the OCI image format, re-signed as `deb sign` re-signs packages: an
//! image layout (a directory, `skopeo copy … oci:DIR`) or an OCI archive (that directory in a
//! tar, `podman save --format oci-archive`). Each layer is read as a stream and its ELF files
//! signed in it ([`crate::tar_stream::resign`]), every other byte of the layer kept; then the
//! layer's digest and size, the configuration's `diff_ids`, the configuration, the manifest and
//! the indexes above it follow. Images for other platforms in a multi-platform index, and
//! what is not an image (signatures, attestations), are left as they are.
//!
//! The result is a new image: signatures made of the old one (cosign, a registry's) no longer
//! match it.

pub mod archive;
pub mod image;
pub mod layer;
pub mod layout;
pub mod platform;
