//! The plan of a `#copy` between arrays of two types: the path it takes follows from the
//! two layouts and from where the arrays are (host memory or a GPU). The runtime copies by
//! it, and `parray copy` shows it.

use std::fmt;

use crate::error::Result;
use crate::tree::Module;

/// How a copy between two types and memories is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyPath {
    /// Both layouts contiguous in logical order: one memcpy (host), `cuMemcpyHtoD`,
    /// `DtoH` or `DtoD` (one GPU) of the elements.
    Bulk,
    /// Both arrays in host memory (the emulation's dmem too): the element loop.
    HostLoop,
    /// Both on one GPU: a remap kernel (`body::emit_c::remap_kernel`).
    DeviceRemap,
    /// Host to GPU, the destination contiguous: pack on the host, one transfer.
    PackAndUpload,
    /// Host to GPU, the destination not contiguous: upload the source's storage, remap on
    /// the device.
    UploadAndRemap,
    /// GPU to host, the source contiguous: one transfer, scatter on the host.
    DownloadAndScatter,
    /// GPU to host, the source not contiguous: remap on the device into a contiguous
    /// staging array, one transfer, scatter on the host.
    RemapAndDownload,
    /// Between two GPUs, both contiguous: one peer copy (`cuMemcpyPeerAsync`).
    PeerBulk,
    /// Between two GPUs, a layout not contiguous: on the source GPU a remap into a
    /// contiguous staging array (when the source is not contiguous), one peer copy, and on
    /// the destination GPU a remap out of a contiguous staging array (when the destination
    /// is not contiguous).
    PeerRemap,
}

/// Where an array of a copy is: host memory (the emulation's dmem included) or the memory
/// of GPU `n` (the driver's numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Host,
    Gpu(usize),
}

impl CopyPath {
    /// Whether the path runs a remap kernel on the device.
    pub fn remaps_on_device(self) -> bool {
        matches!(
            self,
            CopyPath::DeviceRemap
                | CopyPath::UploadAndRemap
                | CopyPath::RemapAndDownload
                | CopyPath::PeerRemap
        )
    }
}

impl fmt::Display for CopyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CopyPath::Bulk => "one bulk copy (both contiguous in logical order)",
            CopyPath::HostLoop => "the element loop on the host",
            CopyPath::DeviceRemap => "a remap kernel on the device",
            CopyPath::PackAndUpload => "pack on the host, then one host-to-device transfer",
            CopyPath::UploadAndRemap => {
                "one host-to-device transfer of the source, then a remap kernel"
            }
            CopyPath::DownloadAndScatter => "one device-to-host transfer, then scatter on the host",
            CopyPath::RemapAndDownload => {
                "a remap kernel into a staging array, one device-to-host transfer, then scatter"
            }
            CopyPath::PeerBulk => "one peer copy between the two GPUs",
            CopyPath::PeerRemap => {
                "a remap into contiguous order on the source GPU (unless contiguous), one peer \
                 copy, then a remap on the destination GPU (unless contiguous)"
            }
        })
    }
}

/// Whether element `k` of the type `name` is at offset `k`, for every `k`.
pub fn contiguous_in_order(module: &Module, name: &str) -> Result<bool> {
    let dim = module.resolve(&crate::ast::Ident {
        name: name.to_string(),
        span: crate::Span::default(),
    })?;
    let off = crate::offset_function(module, dim.node, "k")?;
    Ok(off.expr.as_var().is_some() || (module.size(dim.node) == 1 && off.as_const() == Some(0)))
}

/// The path of a copy from an array of `src` to one of `dst`; each side is its type (in
/// its module) and where the array is.
pub fn plan(
    (src_module, src, src_at): (&Module, &str, Place),
    (dst_module, dst, dst_at): (&Module, &str, Place),
) -> Result<CopyPath> {
    use Place::{Gpu, Host};
    let s = contiguous_in_order(src_module, src)?;
    let d = contiguous_in_order(dst_module, dst)?;
    Ok(match (src_at, dst_at) {
        (Gpu(a), Gpu(b)) if a != b && s && d => CopyPath::PeerBulk,
        (Gpu(a), Gpu(b)) if a != b => CopyPath::PeerRemap,
        _ if s && d => CopyPath::Bulk,
        (Host, Host) => CopyPath::HostLoop,
        (Gpu(_), Gpu(_)) => CopyPath::DeviceRemap,
        (Host, Gpu(_)) if d => CopyPath::PackAndUpload,
        (Host, Gpu(_)) => CopyPath::UploadAndRemap,
        (Gpu(_), Host) if s => CopyPath::DownloadAndScatter,
        (Gpu(_), Host) => CopyPath::RemapAndDownload,
    })
}
