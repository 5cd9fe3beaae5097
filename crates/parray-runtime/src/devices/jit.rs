//! NVRTC compilation of generated kernels, cached per device in memory and on disk.
//!
//! Options: only `--gpu-architecture=sm_XY` of the device, so the PTX is JIT-free on it
//! (`sm_90a` for a kernel with a wgmma, which opens with [`SM90A`]). A kernel that opens
//! with [`FOLLOWS_PREVIOUS_GRID`] is launched, on sm_90 and later, while the grid before it
//! may still run.
//! No `--use_fast_math` (it would change results against the CPU emulation) and no
//! `-default-device` (generated sources mark their own `__device__` helpers).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::{self, CompileError, CompileOptions, Ptx};

use parray_compiler::back::c::{FOLLOWS_PREVIOUS_GRID, SM90A};

use crate::error::{Error, Result};

/// First line of a disk-cache entry, followed by the FNV-1a hash of the PTX in hex.
const ENTRY_MAGIC: &str = "parray-ptx-v1";

/// A GPU's compiled kernels: functions belong to the context they were loaded into.
pub(crate) struct Kernels {
    /// The context they are loaded into.
    ctx: Arc<CudaContext>,
    /// What this device's compilations target, found on the first one.
    target: OnceLock<std::result::Result<Target, String>>,
    /// By the hash of (kernel, source, architecture, NVRTC version).
    by_key: Mutex<HashMap<u64, Kernel>>,
    /// By the address and length of a `'static` source and the kernel's name (one source
    /// may hold several kernels).
    by_address: Mutex<HashMap<(usize, usize, String), Kernel>>,
}

/// A compiled kernel: its function, and the module holding it (and its `__constant__`
/// arrays, which a launch fills).
#[derive(Clone)]
pub(crate) struct Kernel {
    pub(crate) function: CudaFunction,
    pub(crate) module: Arc<CudaModule>,
    /// Whether its launch may overlap the previous grid's tail: the kernel waits for that
    /// grid first ([`FOLLOWS_PREVIOUS_GRID`]) and the GPU has programmatic dependent launch.
    pub(crate) follows_previous_grid: bool,
}

/// What a compilation targets: the device's architecture and the NVRTC that compiles.
struct Target {
    arch: String,
    nvrtc: String,
    /// Programmatic dependent launch: compute capability 9.0 and later.
    dependent_launch: bool,
}

impl Kernels {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> Kernels {
        Kernels {
            ctx,
            target: OnceLock::new(),
            by_key: Mutex::default(),
            by_address: Mutex::default(),
        }
    }

    /// [`Kernels::compile`] for sources that live as long as the process (the kernels
    /// `detour!` generates): found again by address, so that a launch does not rehash its
    /// source.
    pub(crate) fn compile_static(&self, kernel: &str, source: &'static str) -> Result<Kernel> {
        let key = (source.as_ptr() as usize, source.len(), kernel.to_string());
        let by_address = &self.by_address;
        if let Some(f) = by_address
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(f.clone());
        }
        let f = self.compile(kernel, source)?;
        by_address
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, f.clone());
        Ok(f)
    }

    /// The function `kernel` of `source`, compiled for this GPU.
    ///
    /// Each (kernel, source) is compiled once per device and process, and once per machine
    /// and architecture through the disk cache (`PARRAY_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/parray`, else `$HOME/.cache/parray`), whose entries are keyed by
    /// source, architecture and NVRTC version. `PARRAY_DUMP_SOURCE=1` prints each kernel's
    /// source to stderr on its first use on a device.
    pub(crate) fn compile(&self, kernel: &str, source: &str) -> Result<Kernel> {
        let target = self.target()?;
        let arch = architecture(kernel, source, &target.arch)?;
        let key = fnv1a(&[kernel, source, &arch, &target.nvrtc]);
        // Held while compiling: two threads asking for one kernel compile it once.
        let mut loaded = self.by_key.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = loaded.get(&key) {
            return Ok(f.clone());
        }
        dump_source(kernel, source, "");
        let follows = target.dependent_launch && source.contains(FOLLOWS_PREVIOUS_GRID);
        let entry = cache_dir().map(|dir| dir.join(format!("{key:016x}.ptx")));
        let cached = entry
            .as_deref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| parse_entry(&text).map(str::to_owned))
            .and_then(|ptx| self.load(kernel, Ptx::from_src(ptx), follows).ok());
        let function = match cached {
            Some(f) => f,
            None => {
                let mut options = vec![format!("--gpu-architecture={arch}")];
                if source.contains("#include <cuda_") {
                    options.extend(
                        toolkit_include_dirs()
                            .iter()
                            .map(|d| format!("--include-path={}", d.display())),
                    );
                }
                let ptx = nvrtc::compile_ptx_with_opts(
                    source,
                    CompileOptions {
                        options,
                        name: Some(format!("{kernel}.cu")),
                        ..Default::default()
                    },
                )
                .map_err(|e| nvrtc_error(kernel, source, e))?;
                if let Some(path) = &entry {
                    // Best effort: a cache that cannot be written costs a recompile, not a failure.
                    let _ = write_atomically(path, &format_entry(&ptx.to_src()));
                }
                self.load(kernel, ptx, follows)?
            }
        };
        loaded.insert(key, function.clone());
        Ok(function)
    }

    /// `source` compiled to LTO-IR for this GPU (`-dlto`, relocatable device code), for a
    /// library to link into its own kernels: a cuFFT callback called `name`. Not cached:
    /// the library's link at planning time costs more than this compile.
    pub(crate) fn compile_lto(&self, name: &str, source: &str) -> Result<Vec<u8>> {
        let target = self.target()?;
        let arch = target.arch.replace("sm_", "compute_");
        dump_source(name, source, " (LTO-IR)");
        let options = [
            format!("--gpu-architecture={arch}"),
            "--relocatable-device-code=true".to_string(),
            "-dlto".to_string(),
        ];
        let failed = |log: String| Error::Nvrtc {
            kernel: name.to_string(),
            log,
            source_code: source.to_string(),
        };
        let code = std::ffi::CString::new(source).map_err(|e| failed(e.to_string()))?;
        let program =
            nvrtc::result::create_program(&code, None).map_err(|e| failed(format!("{e:?}")))?;
        // SAFETY: `program` was created above and is destroyed once, below; the options
        // are NUL-free strings that outlive the call; the LTO-IR buffer is as long as
        // NVRTC says it is.
        let compiled = unsafe {
            match nvrtc::result::compile_program(program, &options) {
                Ok(()) => {
                    let mut size = 0;
                    nvrtc::sys::nvrtcGetLTOIRSize(program, &mut size)
                        .result()
                        .and_then(|()| {
                            let mut ir = vec![0u8; size];
                            nvrtc::sys::nvrtcGetLTOIR(program, ir.as_mut_ptr().cast())
                                .result()
                                .map(|()| ir)
                        })
                        .map_err(|e| failed(format!("{e:?}")))
                }
                Err(e) => {
                    let log = nvrtc::result::get_program_log(program).map_or_else(
                        |_| format!("{e:?}"),
                        |log| {
                            let bytes: Vec<u8> = log.iter().map(|c| *c as u8).collect();
                            String::from_utf8_lossy(&bytes)
                                .trim_end_matches('\0')
                                .to_string()
                        },
                    );
                    Err(failed(log))
                }
            }
        };
        // SAFETY: created above, not used after this.
        let _ = unsafe { nvrtc::result::destroy_program(program) };
        compiled
    }

    fn target(&self) -> Result<&Target> {
        self.target
        .get_or_init(|| {
            // SAFETY: only tries to dlopen the NVRTC library.
            if !unsafe { nvrtc::sys::is_culib_present() } {
                return Err(
                    "NVRTC (libnvrtc) could not be loaded; add the CUDA toolkit's lib folder to LD_LIBRARY_PATH".into(),
                );
            }
            let (major, minor) = self
                .ctx
                .compute_capability()
                .map_err(|e| {
                    format!(
                        "the compute capability of GPU {} is unknown: {e}",
                        self.ctx.ordinal()
                    )
                })?;
            let (mut v_major, mut v_minor) = (0, 0);
            // SAFETY: two valid out-pointers; the library is loaded (checked above).
            unsafe { nvrtc::sys::nvrtcVersion(&mut v_major, &mut v_minor) }
                .result()
                .map_err(|e| format!("the NVRTC version is unknown: {e:?}"))?;
            Ok(Target {
                arch: format!("sm_{major}{minor}"),
                dependent_launch: major >= 9,
                nvrtc: format!("{v_major}.{v_minor}"),
            })
        })
        .as_ref()
        .map_err(|reason| Error::CudaUnavailable {
            reason: reason.clone(),
        })
    }

    fn load(&self, kernel: &str, ptx: Ptx, follows_previous_grid: bool) -> Result<Kernel> {
        self.ctx
            .load_module(ptx)
            .and_then(|module| {
                Ok(Kernel {
                    function: module.load_function(kernel)?,
                    module,
                    follows_previous_grid,
                })
            })
            .map_err(|e| Error::ModuleLoad {
                kernel: kernel.to_string(),
                reason: e.to_string(),
            })
    }
}

/// The CUDA toolkit's header folders, for kernels over halves (`cuda_fp16.h`,
/// `cuda_bf16.h`, and CUDA 13's `cccl/` that they include): under `CUDA_PATH`,
/// `CUDA_HOME`, `/usr/local/cuda`, or beside a `lib64` of `LD_LIBRARY_PATH`.
fn toolkit_include_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let roots = ["CUDA_PATH", "CUDA_HOME"]
            .into_iter()
            .filter_map(std::env::var_os)
            .map(PathBuf::from)
            .chain([PathBuf::from("/usr/local/cuda")])
            .chain(
                std::env::var_os("LD_LIBRARY_PATH")
                    .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|lib| lib.parent().map(Path::to_path_buf)),
            );
        let include = roots
            .map(|root| root.join("include"))
            .find(|dir| dir.join("cuda_fp16.h").is_file());
        include
            .into_iter()
            .flat_map(|dir| [dir.join("cccl"), dir])
            .filter(|dir| dir.is_dir())
            .collect()
    })
}

fn nvrtc_error(kernel: &str, source: &str, e: CompileError) -> Error {
    let mut log = match e {
        CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
        other => other.to_string(),
    };
    if source.contains("#include <cuda_") && toolkit_include_dirs().is_empty() {
        log.push_str("\nparray: the kernel computes with halves, whose header (cuda_fp16.h, cuda_bf16.h) is the CUDA toolkit's, and no toolkit was found: set CUDA_PATH to its folder");
    }
    Error::Nvrtc {
        kernel: kernel.to_string(),
        log,
        source_code: source.to_string(),
    }
}

/// `PARRAY_DUMP_SOURCE=1`: the kernel's source on stderr, once per compilation (and once
/// per kernel under the emulation, which runs the same body on the CPU: `note` says so).
pub(crate) fn dump_source(kernel: &str, source: &str, note: &str) {
    if std::env::var_os("PARRAY_DUMP_SOURCE").is_some_and(|v| v == "1") {
        crate::diag::note(format_args!("source of kernel {kernel}{note}:\n{source}"));
    }
}

/// `PARRAY_DUMP_SOURCE=hip`: the HIP C++ of each kernel launched, on stderr, once per
/// kernel and process, whatever the backend (HIP kernels are compiled, never run here).
pub(crate) fn dump_hip_source(kernel: &'static str, hip: Option<&str>) {
    static DUMPED: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    if std::env::var_os("PARRAY_DUMP_SOURCE").is_none_or(|v| v != "hip") {
        return;
    }
    let first = DUMPED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(kernel);
    match (first, hip) {
        (true, Some(hip)) => {
            crate::diag::note(format_args!("HIP source of kernel {kernel}:\n{hip}"))
        }
        (true, None) => crate::diag::note(format_args!(
            "kernel {kernel} has no HIP source (a generic detour's, made at its launch, or a copy's)"
        )),
        _ => {}
    }
}

/// The disk cache's folder, if any environment variable names one.
fn cache_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    var("PARRAY_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| Path::new(&d).join("parray")))
        .or_else(|| var("HOME").map(|d| Path::new(&d).join(".cache/parray")))
}

/// A disk-cache entry: a header with the PTX's hash, so a truncated or altered file is
/// recognised and recompiled instead of loaded.
fn format_entry(ptx: &str) -> String {
    format!("{ENTRY_MAGIC} {:016x}\n{ptx}", fnv1a(&[ptx]))
}

/// The PTX of a well-formed entry.
fn parse_entry(text: &str) -> Option<&str> {
    let (header, ptx) = text.split_once('\n')?;
    let hash = header.strip_prefix(ENTRY_MAGIC)?.strip_prefix(' ')?;
    (u64::from_str_radix(hash, 16).ok()? == fnv1a(&[ptx])).then_some(ptx)
}

/// Writes through a temporary file and a rename, so readers never see half an entry. The
/// temporary file is the writer's own (process and write), since two devices of one
/// process may write the same entry at once.
fn write_atomically(path: &Path, contents: &str) -> std::io::Result<()> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let write = WRITES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp.{}.{write}", std::process::id()));
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The architecture NVRTC compiles `source` for on a GPU of `device` (`sm_XY`): the
/// device's, or `sm_90a` for a kernel with a wgmma or a `setmaxnreg` ([`SM90A`]: plain
/// sm_90 rejects them), which only an sm_90 GPU runs.
fn architecture(kernel: &str, source: &str, device: &str) -> Result<String> {
    match source.contains(SM90A) {
        false => Ok(device.to_string()),
        true if device == "sm_90" => Ok("sm_90a".to_string()),
        true => Err(Error::Unsupported {
            what: "wgmma",
            reason: format!(
                "the kernel `{kernel}` has a wgmma (`#mma` of shared tiles) or a `#setmaxnreg`, which only an sm_90 GPU (Hopper) runs, built for sm_90a; this GPU is {device}"
            ),
        }),
    }
}

/// FNV-1a (64-bit) over the parts, each followed by a 0 byte: stable across Rust
/// releases (unlike `DefaultHasher`), which the disk cache's file names need.
fn fnv1a(parts: &[&str]) -> u64 {
    parts
        .iter()
        .flat_map(|p| p.bytes().chain([0]))
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_corruption_is_detected() {
        let ptx = ".version 8.0\n.target sm_90\n// body\n";
        let entry = format_entry(ptx);
        assert_eq!(parse_entry(&entry), Some(ptx));
        assert_eq!(parse_entry(&entry[..entry.len() - 3]), None, "truncated");
        assert_eq!(
            parse_entry(&entry.replace("sm_90", "sm_80")),
            None,
            "altered"
        );
        assert_eq!(parse_entry("garbage"), None);
        assert_eq!(
            parse_entry(&entry.replacen("v1", "v0", 1)),
            None,
            "old format"
        );
    }

    #[test]
    fn a_kernel_with_a_wgmma_is_built_for_sm_90a_on_sm_90_only() {
        let wgmma = format!("// Generated by parray from x.rs; do not edit.\n{SM90A}");
        assert_eq!(architecture("k", "// plain", "sm_80").unwrap(), "sm_80");
        assert_eq!(architecture("k", &wgmma, "sm_90").unwrap(), "sm_90a");
        let e = architecture("k", &wgmma, "sm_100").unwrap_err().to_string();
        assert!(
            e.contains("only an sm_90 GPU (Hopper) runs, built for sm_90a; this GPU is sm_100"),
            "{e}"
        );
    }

    #[test]
    fn hashes_separate_their_parts() {
        assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
        // Pinned value: a change of hash would orphan every disk-cache entry.
        assert_eq!(fnv1a(&["a"]), 0x089b_e207_b544_f1e4);
    }

    #[test]
    fn atomic_writes_replace_whole_files() {
        let dir = std::env::temp_dir().join(format!("parray-jit-test-{}", std::process::id()));
        let path = dir.join("nested/entry.ptx");
        write_atomically(&path, "first").unwrap();
        write_atomically(&path, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["entry.ptx"], "no temporary file is left");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
