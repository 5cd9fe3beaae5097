//! Launching generated kernels (or their CPU emulation) for cuda detours.
