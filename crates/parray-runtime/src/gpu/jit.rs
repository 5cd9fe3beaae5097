//! NVRTC compilation of generated kernels, cached in memory and on disk.
