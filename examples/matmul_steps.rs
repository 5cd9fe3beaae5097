//! Seed 000's matrix multiply in steps (its lessons 1 to 5), each beside the seed's own
//! kernel and cuBLAS's SGEMM, at N = 1000 and 4096 on a GPU (100 and 128 under the
//! emulation, or anywhere with `--small`; `--n N` one of the four):
//!
//! 1. **global memory**, the seed's `MatrixMul_device`: a block per row of C, its 32
//!    threads striding over the columns (the seed found 32 faster than 256), each summing
//!    `a[row][k] * b[k][j]` over k;
//! 2. **the row of A in shared memory**: the block first copies its row of A into shared
//!    memory (a strided loop, `#sync`), and the sums read it from there;
//! 3. **XNOR/popcount** on matrices of ±1 (the seed's `MatrixRandBin`): each row of A and
//!    column of B packed 32 values to an `int`, a 1 bit where the value is 1, zeros
//!    padding K to 32 W (the seed's `AMatrix2Bin`, `BMatrix2Bin`; ours are thread arrays
//!    of the packed matrix's shape, a thread per word, where the seed's loop over the words
//!    on a grid of 6 x 512 threads, here 264 x 512); then `MatrixMulXnor`: C[i][j] is the
//!    sum over the W packed k of `32 - 2 * popcount(a ^ b)`, less `rest` = 32 W - N (the
//!    padding's zeros agree), popcount by the seed's 256-entry `uchar` table read from
//!    device memory (`POPCOUNT_TABLE`, filled from the host); and the seed's last variant,
//!    the packed row of A in shared memory.
//!
//! The matrices are stored as the seed's later lessons store them, in pitched rows
//! (`cudaMallocPitch`): `PITCHED` has P floats a row, a multiple of 128 (512 bytes) as
//! the seed computes it (`((1000 - 1) / 128 + 1) * 128` = 1024), and 32 W rows, so that the
//! zeros past the matrix pad A's rows and B's columns to 32 W for the packing, as the
//! seed's zeroed copies do; `M` is the N x N matrix in it (`[N #PITCHED_0][N #PITCHED_1]`),
//! filled by `#copy` from a dense host matrix. The packed B has rows of P ints too; the
//! packed A is dense, N rows of W ints (a block reads its row whole).
//!
//! Checks: steps 1 and 2 on random floats, relative Frobenius error at most 1e-5 against
//! an f64 CPU product (`common::gemm::Inputs`), against cuBLAS's at N = 4096 on a GPU;
//! step 3 exactly, the packed words against the CPU's packing and every product against
//! the ±1 product computed on the CPU (64 values a `u64`, `count_ones`: N^3/64 word
//! operations, about 1 s at N = 4096). On a GPU the seed's kernels (unchanged but for
//! `extern "C"`, shared arrays sized at launch, and the popcount table passed as an
//! argument instead of `cudaMemcpyToSymbol`) are checked the same way and timed on the
//! same arrays, and cuBLAS's SGEMM is timed on dense copies (on the ±1 matrices too, the
//! float product the seed compares with, whose exactness its row says).

mod common;

use common::gemm::{self, Inputs, Row};
use parray::gpu::{KernelArg, Timing};
use parray::prelude::*;

parray! {
    dmem uchar [256] POPCOUNT_TABLE;
}

subprog! {
    /// Step 1: block r computes row r of C, its threads striding over the columns.
    fn global<T>(da, db, dc) {
        parray! {
            cuda(float* a, float* b, float* c) [dim(T_0)][32] ROWS;
        }
        detour!(ROWS(da, db, dc) {
            let mut j = $tid_1$;
            while j < $dim(T_1)$ {
                let mut sum = 0.0f32;
                for k in 0..$dim(T_1)$ {
                    sum += a[$T[$tid_0$][k]$] * b[$T[k][j]$];
                }
                c[$T[$tid_0$][j]$] = sum;
                j += $dim(ROWS_1)$;
            }
        })
    }
}

subprog! {
    /// Step 2: step 1 with the block's row of A first copied into shared memory.
    fn shared_row<T>(da, db, dc) {
        parray! {
            cuda(float* a, float* b, float* c) [dim(T_0)][32] ROWS;
            smem float [dim(T_1)] ROW;
        }
        detour!(ROWS(da, db, dc) {
            let row = ROW::create();
            let mut k = $tid_1$;
            while k < $dim(T_1)$ {
                row[k] = a[$T[$tid_0$][k]$];
                k += $dim(ROWS_1)$;
            }
            #sync;
            let mut j = $tid_1$;
            while j < $dim(T_1)$ {
                let mut sum = 0.0f32;
                for k in 0..$dim(T_1)$ {
                    sum += row[k] * b[$T[k][j]$];
                }
                c[$T[$tid_0$][j]$] = sum;
                j += $dim(ROWS_1)$;
            }
        })
    }
}

subprog! {
    /// Step 3: thread w of block r packs the values 32w .. 32w + 31 of row r of the
    /// zero-padded storage `S` into word w of row r of `A`, the first at bit 31, a 1 bit
    /// where the value is 1 (the seed's `AMatrix2Bin`).
    fn pack_a<S, A>(da, dabin) {
        parray! {
            cuda(float* a, int* a_bin) [dim(A_0)][dim(A_1)] WORDS;
        }
        detour!(WORDS(da, dabin) {
            let mut word = 0i32;
            for t in 0..32 {
                word = (word << 1) | (a[$S[$tid_0$][$tid_1$ * 32 + t]$] == 1.0) as i32;
            }
            a_bin[$A[$tid_0$][$tid_1$]$] = word;
        })
    }
}

subprog! {
    /// Step 3: block w packs the values 32w .. 32w + 31 of each column c into word w of
    /// column c of `B` (the seed's `BMatrix2Bin`), its threads striding over the columns
    /// so that a warp reads and writes consecutive columns.
    fn pack_b<S, B>(db, dbbin) {
        parray! {
            cuda(float* b, int* b_bin) [dim(B_0)][256] WORDS;
        }
        detour!(WORDS(db, dbbin) {
            let mut c = $tid_1$;
            while c < $dim(B_1)$ {
                let mut word = 0i32;
                for t in 0..32 {
                    word = (word << 1) | (b[$S[$tid_0$ * 32 + t][c]$] == 1.0) as i32;
                }
                b_bin[$B[$tid_0$][c]$] = word;
                c += $dim(WORDS_1)$;
            }
        })
    }
}

subprog! {
    /// Step 3: `MatrixMulXnor`, block r computing row r of C from the packed A and B.
    fn xnor<T, A, B>(dabin, dbbin, dc, dtable) {
        parray! {
            cuda(int* a, int* b, float* c, uchar* table) [dim(T_0)][32] ROWS;
        }
        detour!(ROWS(dabin, dbbin, dc, dtable) {
            let rest = ($dim(A_1)$ * 32 - $dim(T_1)$) as i32;
            let mut j = $tid_1$;
            while j < $dim(T_1)$ {
                let mut sum = 0i32;
                for k in 0..$dim(A_1)$ {
                    let x = a[$A[$tid_0$][k]$] ^ b[$B[k][j]$];
                    let negative = table[$POPCOUNT_TABLE[(x & 255) as usize]$]
                        + table[$POPCOUNT_TABLE[(x >> 8 & 255) as usize]$]
                        + table[$POPCOUNT_TABLE[(x >> 16 & 255) as usize]$]
                        + table[$POPCOUNT_TABLE[(x >> 24 & 255) as usize]$];
                    sum += 32 - 2 * negative as i32;
                }
                c[$T[$tid_0$][j]$] = (sum - rest) as f32;
                j += $dim(ROWS_1)$;
            }
        })
    }
}

subprog! {
    /// Step 3: `MatrixMulXnor` with the block's packed row of A in shared memory.
    fn xnor_shared<T, A, B>(dabin, dbbin, dc, dtable) {
        parray! {
            cuda(int* a, int* b, float* c, uchar* table) [dim(T_0)][32] ROWS;
            smem int [dim(A_1)] AROW;
        }
        detour!(ROWS(dabin, dbbin, dc, dtable) {
            let row = AROW::create();
            let mut k = $tid_1$;
            while k < $dim(A_1)$ {
                row[k] = a[$A[$tid_0$][k]$];
                k += $dim(ROWS_1)$;
            }
            #sync;
            let rest = ($dim(A_1)$ * 32 - $dim(T_1)$) as i32;
            let mut j = $tid_1$;
            while j < $dim(T_1)$ {
                let mut sum = 0i32;
                for k in 0..$dim(A_1)$ {
                    let x = row[k] ^ b[$B[k][j]$];
                    let negative = table[$POPCOUNT_TABLE[(x & 255) as usize]$]
                        + table[$POPCOUNT_TABLE[(x >> 8 & 255) as usize]$]
                        + table[$POPCOUNT_TABLE[(x >> 16 & 255) as usize]$]
                        + table[$POPCOUNT_TABLE[(x >> 24 & 255) as usize]$];
                    sum += 32 - 2 * negative as i32;
                }
                c[$T[$tid_0$][j]$] = (sum - rest) as f32;
                j += $dim(ROWS_1)$;
            }
        })
    }
}

/// The seed's lesson 3 kernel (lesson 2's, `common::SEED_000_MATRIX_MUL`, with the row of
/// A in shared memory), made `extern "C"`; the shared row sized at launch, as its lesson 5
/// does (its `a_shared[1000]` holds no row of 4096).
const SEED: &str = r#"
extern "C" __global__ void MatrixMul_shared(float *a,int a_pitch,int a_rows,int a_cols,float *b,int b_pitch,int b_rows,int b_cols,float *c,int c_pitch){
    int tix=threadIdx.x;
    int tiy=threadIdx.y;
    int bix=blockIdx.x;
    int biy=blockIdx.y;
    int bdx=blockDim.x;
    int bdy=blockDim.y;
    int gdx=gridDim.x;
    int gdy=gridDim.y;
    extern __shared__ float a_shared[];
    for(int j=tix;j<a_cols;j+=bdx){
        a_shared[j]=a[bix*a_pitch+j];
    }
    __syncthreads();
    int i,k;
    for(i=tix;i<b_cols;i+=bdx){
        float sum=0;
        for(k=0;k<a_cols;k++){
            sum+=a_shared[k]*b[k*b_pitch+i];
        }
        c[bix*a_pitch+i]=sum;
    }
}
"#;

/// The seed's binary kernels (lessons 4 and 5), the popcount table an argument (the seed
/// fills a `__device__` array by `cudaMemcpyToSymbol`, which a kernel compiled by NVRTC
/// cannot share with the host).
const SEED_XNOR: &str = r#"
//horizontal
extern "C" __global__ void AMatrix2Bin(float *a,int *a_bin,int a_rows,int pitch_a,int pitch_a_bin,int MaxBS,int BINSIZE){
    int tix=threadIdx.x;
    // int tiy=threadIdx.y;
    int bix=blockIdx.x;
    // int biy=blockIdx.y;
    int bdx=blockDim.x;
    // int bdy=blockDim.y;
    int gdx=gridDim.x;
    // int gdy=gridDim.y;


    int maxThreads=MaxBS*a_rows;
    for(int id = bix*bdx+tix; id < maxThreads; id+=gdx*bdx) {
        int rid=id/MaxBS;
        int cid=id%MaxBS;

        int Integer=0;
        int base=1;
        for (int i=0;i<BINSIZE;i++){
            if (a[rid*pitch_a+(cid+1)*BINSIZE-1-i]==1.f){
                Integer+=base;
            }
            base=base<<1;
        }

        a_bin[rid*pitch_a_bin+cid]=Integer;
    }

}
//vetical
extern "C" __global__ void BMatrix2Bin(float *b,int *b_bin,int b_cols,int pitch_b,int pitch_b_bin,int MaxBS,int BINSIZE){
    int tix=threadIdx.x;
    // int tiy=threadIdx.y;
    int bix=blockIdx.x;
    // int biy=blockIdx.y;
    int bdx=blockDim.x;
    // int bdy=blockDim.y;
    int gdx=gridDim.x;
    // int gdy=gridDim.y;

    int maxThreads=MaxBS*b_cols;
    for(int id = bix*bdx+tix; id < maxThreads; id+=gdx*bdx) {
        int cid=id/MaxBS;
        int rid=id%MaxBS;

        int Integer=0;
        int base=1;
        for (int i=0;i<BINSIZE;i++){
            if (b[((rid+1)*BINSIZE-1-i)*pitch_b+cid]==1.f){
                Integer+=base;
            }
            base=base<<1;
        }

        b_bin[rid*pitch_b_bin+cid]=Integer;
    }

}
__device__ int popcount (unsigned char *__popcount_tab_device, int x) {
  return __popcount_tab_device[(x >>  0) & 0xff]
  + __popcount_tab_device[(x >>  8) & 0xff]
  + __popcount_tab_device[(x >> 16) & 0xff]
  + __popcount_tab_device[(x >> 24) & 0xff];
}
extern "C" __global__ void MatrixMulXnor(int *a,int *b,int a_rows,int a_cols,
    int b_cols,float *result,int pitch_a,int pitch_b,
    int pitch_result,int BINSIZE,int RealMidSize,unsigned char *__popcount_tab_device){

    int tix=threadIdx.x;
    // int tiy=threadIdx.y;
    int bix=blockIdx.x;
    // int biy=blockIdx.y;
    int bdx=blockDim.x;
    // int bdy=blockDim.y;
    int gdx=gridDim.x;
    // int gdy=gridDim.y;

    int rest=(BINSIZE*a_cols-RealMidSize);

    for(int j=tix;j<b_cols;j+=bdx){
        // printf("i=%d ; j=%d\n",i,j);
        int sum=0;
        for(int k=0;k<a_cols;k++){
            int bin=(a[bix*pitch_a+k]^b[k*pitch_b+j]);
            int negnum=popcount(__popcount_tab_device,bin);
            int posnum=BINSIZE-negnum;
            //calculate ignores the rest of BINSIZE if the Matsize cant devided by BINSIZE ,it can cause err
            //(10/00)'(01/00) should be 0000 but it is 0011,so 1+1 is trash in the result.and it can cause a_rows*b_cols times.
            sum+=(posnum-negnum);
        }
        result[bix*pitch_result+j]=sum-rest;
    }
}
extern "C" __global__ void MatrixMulXnor_shared(int *a,int *b,int a_rows,int a_cols,
    int b_cols,float *result,int pitch_a,int pitch_b,
    int pitch_result,int BINSIZE,int RealMidSize,unsigned char *__popcount_tab_device){
    int tix=threadIdx.x;
    // int tiy=threadIdx.y;
    int bix=blockIdx.x;
    // int biy=blockIdx.y;
    int bdx=blockDim.x;
    // int bdy=blockDim.y;
    int gdx=gridDim.x;
    // int gdy=gridDim.y;
    extern __shared__ int a_shared[];
    for(int j=tix;j<a_cols;j+=bdx){
        // printf("i=%d ; j=%d\n",i,j);
        a_shared[j]=a[bix*pitch_a+j];
    }
    __syncthreads();
    int rest=(BINSIZE*a_cols-RealMidSize);

    for(int j=tix;j<b_cols;j+=bdx){
        // printf("i=%d ; j=%d\n",i,j);
        int sum=0;
        for(int k=0;k<a_cols;k++){
            int bin=(a_shared[k]^b[k*pitch_b+j]);
            int negnum=popcount(__popcount_tab_device,bin);
            int posnum=BINSIZE-negnum;
            //calculate ignores the rest of BINSIZE if the Matsize can't devided by BINSIZE ,it can cause err
            //(10/00)'(01/00) should be 0000 but it is 0011,so 1+1 is trash in the result.and it mislead a_rows*b_cols times.
            sum+=(posnum-negnum);
        }
        result[bix*pitch_result+j]=sum-rest;
    }
}
"#;

/// The grid of the seed's packing kernels: blocks of 512 threads, two a multiprocessor (its
/// 6 on its GTX 840M's 3; here an H100's 132).
const PACK_GRID: [u32; 3] = [264, 1, 1];
const PACK_BLOCK: [u32; 3] = [512, 1, 1];

/// The types of one size, N, with rows of P floats and W = ceil(N / 32) packed ints, and
/// the subprograms instantiated for them.
macro_rules! at_size {
    ($module:ident, $n:literal, $pitch:literal, $words:literal) => {
        mod $module {
            use super::*;

            parray! {
                const N = $n;
                paged float [N][N] H;
                dmem float [N][N] DENSE;
                dmem float [32 * $words][$pitch] PITCHED;
                float [N #PITCHED_0][N #PITCHED_1] M;
                dmem int [N][$words] ABIN;
                dmem int [$words][$pitch] BBIN_ROWS;
                int [#BBIN_ROWS_0][N #BBIN_ROWS_1] BBIN;
            }

            pub fn run(repeats: usize, table: &Array<POPCOUNT_TABLE>) -> parray::Result<Vec<Step>> {
                let ours = Ours {
                    global: &|a, b, c| global!(<M>(a, b, c)),
                    shared_row: &|a, b, c| shared_row!(<M>(a, b, c)),
                    pack_a: &|a, abin| pack_a!(<PITCHED, ABIN>(a, abin)),
                    pack_b: &|b, bbin| pack_b!(<PITCHED, BBIN>(b, bbin)),
                    xnor: &|abin, bbin, c, t| xnor!(<M, ABIN, BBIN>(abin, bbin, c, t)),
                    xnor_shared: &|abin, bbin, c, t| {
                        xnor_shared!(<M, ABIN, BBIN>(abin, bbin, c, t))
                    },
                };
                let shape = ($n, $pitch, $words);
                steps::<H, DENSE, PITCHED, M, ABIN, BBIN_ROWS>(shape, repeats, table, ours)
            }
        }
    };
}

at_size!(n100, 100, 128, 4);
at_size!(n128, 128, 128, 4);
at_size!(n1000, 1000, 1024, 32);
at_size!(n4096, 4096, 4096, 128);

type Result<T> = parray::Result<T>;
type FloatKernel<'a, S> = &'a dyn Fn(&Array<S>, &Array<S>, &mut Array<S>) -> Result<()>;
type PackKernel<'a, S, P> = &'a dyn Fn(&Array<S>, &mut Array<P>) -> Result<()>;
type XnorKernel<'a, S, A, B> =
    &'a dyn Fn(&Array<A>, &Array<B>, &mut Array<S>, &Array<POPCOUNT_TABLE>) -> Result<()>;

/// Our kernels at one size: the storage `S` of the matrices, `A` of the packed A, `B` of
/// the packed B.
pub struct Ours<'a, S: DataType, A: DataType, B: DataType> {
    global: FloatKernel<'a, S>,
    shared_row: FloatKernel<'a, S>,
    pack_a: PackKernel<'a, S, A>,
    pack_b: PackKernel<'a, S, B>,
    xnor: XnorKernel<'a, S, A, B>,
    xnor_shared: XnorKernel<'a, S, A, B>,
}

/// The steps at one size: ours, and on a GPU the seed's and cuBLAS, each checked. `H` is
/// the dense host matrix, `D` cuBLAS's dense dmem one, `M` the matrix in the pitched
/// storage `S`.
fn steps<H, D, S, M, A, B>(
    (n, pitch, words): (usize, usize, usize),
    repeats: usize,
    table: &Array<POPCOUNT_TABLE>,
    ours: Ours<S, A, B>,
) -> Result<Vec<Step>>
where
    H: DataType<Elem = f32>,
    D: DataType<Elem = f32>,
    S: DataType<Elem = f32>,
    M: ViewOf<S> + DataType<Elem = f32>,
    A: DataType<Elem = i32>,
    B: DataType<Elem = i32>,
{
    let gpu = parray::gpu::backend()? == parray::gpu::Backend::Cuda;
    let (ni, p, w, bits) = (n as i32, pitch as i32, words as i32, 32i32);
    let (grid, block) = ([n as u32, 1, 1], [32, 1, 1]);
    let mut steps = Vec::new();

    // Steps 1 and 2, on random floats.
    let mut cublas = Vec::new();
    let mut inputs = Inputs::new::<D, D, D>((n, n, n), repeats, &mut cublas)?;
    if gpu && n <= 1000 {
        // cuBLAS's product is the reference at 4096 only, where the CPU's is slow.
        inputs.c = gemm::cpu_product((n, n, n), &inputs.a, &inputs.b);
        inputs.reference = "f64 CPU";
    }
    let float_ms = cublas.first().map(|r| r.time);
    let run = |f: FloatKernel<S>| inputs.run::<H, H, H, M, S, M, S, M, S>("", "", repeats, f);
    let seed = |(kernel, source), shared| -> Result<Option<Row>> {
        let f: FloatKernel<S> = &|a, b, c| {
            let args: [&dyn KernelArg; 10] = [a, &p, &ni, &ni, b, &p, &ni, &ni, c, &p];
            common::raw_kernel_with(
                kernel,
                source,
                (grid, block),
                common::Extras {
                    shared_bytes: shared,
                    ..Default::default()
                },
                &args,
            )
        };
        gpu.then(|| run(f)).transpose()
    };
    let (ours_1, seed_1) = (
        run(ours.global)?,
        seed(("MatrixMul_device", common::SEED_000_MATRIX_MUL), 0)?,
    );
    steps.push(Step::float(
        n,
        "1 global memory (MatrixMul_device)",
        ours_1,
        seed_1,
        float_ms,
    ));
    let (ours_2, seed_2) = (
        run(ours.shared_row)?,
        seed(("MatrixMul_shared", SEED), 4 * n as u32)?,
    );
    steps.push(Step::float(
        n,
        "2 row of A in shared memory",
        ours_2,
        seed_2,
        float_ms,
    ));

    // Step 3, on ±1 matrices in their zero-padded storage.
    let (am, bm) = (plus_minus_one(n * n, 1), plus_minus_one(n * n, 2));
    let store = |m: &[f32]| -> Result<Array<S>> {
        let mut h = Array::<H>::new()?;
        h.as_mut_slice()?.copy_from_slice(m);
        let mut s = Array::<S>::new()?;
        parray::copy::copy(&h, s.view_mut::<M>())?;
        Ok(s)
    };
    let (a, b) = (store(&am)?, store(&bm)?);
    let want_a: Vec<i32> = (0..n)
        .flat_map(|r| packed(n, words, |e| am[r * n + e]))
        .collect();
    let columns: Vec<Vec<i32>> = (0..n)
        .map(|j| packed(n, words, |e| bm[e * n + j]))
        .collect();
    let want_b: Vec<i32> = (0..words * pitch)
        .map(|x| columns.get(x % pitch).map_or(0, |column| column[x / pitch]))
        .collect();
    let pack = |kernel, args: &[&dyn KernelArg]| {
        common::raw_kernel(kernel, SEED_XNOR, PACK_GRID, PACK_BLOCK, args)
    };
    let mut abin = Array::<A>::new()?;
    let (ms, seed_ms, ok) = exact(
        &mut abin,
        -1,
        repeats,
        |abin| (ours.pack_a)(&a, abin),
        |abin| pack("AMatrix2Bin", &[&a, abin, &ni, &p, &w, &w, &bits]),
        |abin| Ok(abin.to_vec()? == want_a),
    )?;
    steps.push(Step::exact(
        n,
        "3 pack A's rows (AMatrix2Bin)",
        ms,
        seed_ms,
        None,
        ok,
    ));
    let mut bbin = Array::<B>::new()?;
    let (ms, seed_ms, ok) = exact(
        &mut bbin,
        0,
        repeats,
        |bbin| (ours.pack_b)(&b, bbin),
        |bbin| pack("BMatrix2Bin", &[&b, bbin, &ni, &p, &p, &w, &bits]),
        |bbin| Ok(bbin.to_vec()? == want_b),
    )?;
    steps.push(Step::exact(
        n,
        "3 pack B's columns (BMatrix2Bin)",
        ms,
        seed_ms,
        None,
        ok,
    ));

    let want = binary_product(n, &am, &bm);
    let mut binary_cublas = None;
    if gpu {
        let (mut da, mut db, mut dc) = (Array::<D>::new()?, Array::<D>::new()?, Array::<D>::new()?);
        da.copy_from_slice(&am)?;
        db.copy_from_slice(&bm)?;
        let s = common::median_time(repeats, true, || {
            parray::gpu::cublas::sgemm(&da, &db, &mut dc)
        })?;
        binary_cublas = Some((s, dc.to_vec()? == want));
    }
    let cublas_ms = binary_cublas.map(|(ms, _)| ms);
    let product_ok = |c: &Array<S>| -> Result<bool> {
        let mut h = Array::<H>::new()?;
        parray::copy::copy(c.view::<M>(), &mut h)?;
        Ok(h.as_slice()? == want)
    };
    let seed = |c: &mut Array<S>, kernel, shared| {
        let args: [&dyn KernelArg; 12] =
            [&abin, &bbin, &ni, &w, &ni, c, &w, &p, &p, &bits, &ni, table];
        common::raw_kernel_with(
            kernel,
            SEED_XNOR,
            (grid, block),
            common::Extras {
                shared_bytes: shared,
                ..Default::default()
            },
            &args,
        )
    };
    let mut c = Array::<S>::new()?;
    let (ms, seed_ms, ok) = exact(
        &mut c,
        f32::NAN,
        repeats,
        |c| (ours.xnor)(&abin, &bbin, c, table),
        |c| seed(c, "MatrixMulXnor", 0),
        product_ok,
    )?;
    steps.push(Step::exact(
        n,
        "3 XNOR/popcount (MatrixMulXnor)",
        ms,
        seed_ms,
        cublas_ms,
        ok,
    ));
    let (ms, seed_ms, ok) = exact(
        &mut c,
        f32::NAN,
        repeats,
        |c| (ours.xnor_shared)(&abin, &bbin, c, table),
        |c| seed(c, "MatrixMulXnor_shared", 4 * words as u32),
        product_ok,
    )?;
    steps.push(Step::exact(
        n,
        "3 XNOR, packed row of A in shared",
        ms,
        seed_ms,
        cublas_ms,
        ok,
    ));
    if let (Some(float_ms), Some((ms, exact))) = (float_ms, binary_cublas) {
        let exact = if exact { "exact" } else { "NOT exact" };
        steps.push(Step {
            n,
            name: "cuBLAS SGEMM",
            parray_ms: None,
            seed_ms: None,
            cublas_ms: Some(float_ms),
            check: format!("reference; on the ±1 matrices {ms}, {exact}"),
            ok: true,
        });
    }
    Ok(steps)
}

/// One row of the table.
pub struct Step {
    n: usize,
    name: &'static str,
    parray_ms: Option<Timing>,
    seed_ms: Option<Timing>,
    cublas_ms: Option<Timing>,
    check: String,
    ok: bool,
}

impl Step {
    /// A float product, ours and (on a GPU) the seed's, each within 1e-5 of the reference.
    fn float(
        n: usize,
        name: &'static str,
        ours: Row,
        seed: Option<Row>,
        cublas: Option<Timing>,
    ) -> Step {
        let ok = ours.ok() && seed.as_ref().is_none_or(Row::ok);
        let error = ours.error.unwrap_or(f64::INFINITY);
        let verdict = if ok { "ok" } else { "FAILED" };
        Step {
            n,
            name,
            parray_ms: Some(ours.time),
            seed_ms: seed.map(|r| r.time),
            cublas_ms: cublas,
            check: format!(
                "{verdict} (relative error {error:.1e} vs {})",
                ours.reference
            ),
            ok,
        }
    }

    /// An exact step, ours and (on a GPU) the seed's, each equal to the CPU's result.
    fn exact(
        n: usize,
        name: &'static str,
        ms: Timing,
        seed: Option<Timing>,
        cublas: Option<Timing>,
        ok: bool,
    ) -> Step {
        Step {
            n,
            name,
            parray_ms: Some(ms),
            seed_ms: seed,
            cublas_ms: cublas,
            check: if ok {
                "ok (exact vs CPU)"
            } else {
                "FAILED (differs from CPU)"
            }
            .into(),
            ok,
        }
    }

    fn print(&self) {
        let ms = |t: Option<Timing>| t.map_or("-".to_string(), |t| common::cell(t.ms, 3, t));
        println!(
            "{:>5}  {:<36} {:>21} {:>13} {:>10}  {}",
            self.n,
            self.name,
            ms(self.parray_ms),
            ms(self.seed_ms),
            ms(self.cublas_ms),
            self.check
        );
    }
}

/// Runs `ours` and, on a GPU, `seed` on `out` (first filled with `blank`), each timed and
/// its result checked by `check`.
fn exact<S: DataType>(
    out: &mut Array<S>,
    blank: S::Elem,
    repeats: usize,
    mut ours: impl FnMut(&mut Array<S>) -> Result<()>,
    mut seed: impl FnMut(&mut Array<S>) -> Result<()>,
    check: impl Fn(&Array<S>) -> Result<bool>,
) -> Result<(Timing, Option<Timing>, bool)> {
    let mut run = |f: &mut dyn FnMut(&mut Array<S>) -> Result<()>| -> Result<(Timing, bool)> {
        out.fill(blank)?;
        let ms = common::median_time(repeats, true, || f(out))?;
        Ok((ms, check(out)?))
    };
    let (ms, ok) = run(&mut ours)?;
    let seed = match parray::gpu::backend()? {
        parray::gpu::Backend::Cuda => Some(run(&mut seed)?),
        parray::gpu::Backend::Emulate => None,
    };
    Ok((ms, seed.map(|s| s.0), ok && seed.is_none_or(|s| s.1)))
}

/// `len` values of ±1, each 1 with probability 1/2 (the seed's `MatrixRandBin`).
fn plus_minus_one(len: usize, seed: u64) -> Vec<f32> {
    common::random_values(len, seed)
        .into_iter()
        .map(|v| if v > 0.0 { 1.0 } else { -1.0 })
        .collect()
}

/// The seed's packing of a line of n values into `words` ints: word w holds the values
/// 32w .. 32w + 31, the first at bit 31, a 1 bit where the value is 1 (0 past n).
fn packed(n: usize, words: usize, value: impl Fn(usize) -> f32) -> Vec<i32> {
    (0..words)
        .map(|w| {
            (0..32).fold(0u32, |word, t| {
                let e = 32 * w + t;
                word << 1 | u32::from(e < n && value(e) == 1.0)
            }) as i32
        })
        .collect()
}

/// The product of two row-major n x n matrices of ±1, exactly: with rows of A and columns
/// of B as bits (64 a word), entry (i, j) is n - 2 * (the number of k where they differ).
fn binary_product(n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    let bits = |value: &dyn Fn(usize) -> bool| -> Vec<u64> {
        (0..n.div_ceil(64))
            .map(|w| {
                (0..64)
                    .filter(|t| 64 * w + t < n && value(64 * w + t))
                    .fold(0, |x, t| x | 1 << t)
            })
            .collect()
    };
    let rows: Vec<Vec<u64>> = (0..n).map(|i| bits(&|k| a[i * n + k] > 0.0)).collect();
    let columns: Vec<Vec<u64>> = (0..n).map(|j| bits(&|k| b[k * n + j] > 0.0)).collect();
    rows.iter()
        .flat_map(|r| {
            columns.iter().map(move |c| {
                let differ: u32 = r.iter().zip(c).map(|(x, y)| (x ^ y).count_ones()).sum();
                (n as i64 - 2 * i64::from(differ)) as f32
            })
        })
        .collect()
}

fn main() -> Result<()> {
    // The GPU's sizes take minutes on the CPU emulation: it runs the small ones.
    let sizes = if common::small() {
        vec![100, 128]
    } else {
        gemm::sizes(&[1000, 4096], &[100, 128])?
    };
    let repeats = gemm::repeats()?;
    let mut table = POPCOUNT_TABLE::create()?;
    table.copy_from_slice(
        &(0..=255u8)
            .map(|x| x.count_ones() as u8)
            .collect::<Vec<_>>(),
    )?;
    println!("backend: {}", common::backend(true)?.0);
    println!(
        "{:>5}  {:<36} {:>21} {:>13} {:>10}  check",
        "N", "step", "parray ms", "seed CUDA ms", "cuBLAS ms"
    );
    let mut ok = true;
    for n in sizes {
        let steps = match n {
            100 => n100::run(repeats, &table)?,
            128 => n128::run(repeats, &table)?,
            1000 => n1000::run(repeats, &table)?,
            4096 => n4096::run(repeats, &table)?,
            _ => {
                eprintln!("matmul_steps: N is one of 100, 128, 1000, 4096");
                std::process::exit(2);
            }
        };
        for step in &steps {
            step.print();
            ok &= step.ok;
        }
    }
    common::check(ok);
    Ok(())
}
