//! Parray's runtime: memory kinds, thread arrays (pthd, cuda, CPU emulation of cuda) and copies.
