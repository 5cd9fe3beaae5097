//! CPU emulation of a cuda grid (placeholder; written by its owner).
