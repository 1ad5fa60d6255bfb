// Package image tests the worker image scripts/image.sh builds (build tag
// realpeers, since it builds both binaries): it reads the OCI tarball with
// the standard library alone, as a registry or a runtime would, and runs
// the binaries from the unpacked file system. The package has test files
// only: it is no library.
package image
