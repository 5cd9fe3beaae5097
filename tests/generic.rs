//! Code generic over data types: `$T[i][j]$`, `$dim(T_k)$` and `$size(T)$` with `T` a type
//! parameter, in host code, pthd bodies and cuda bodies, each instantiated with three
//! layouts of one 64x32 matrix and checked against a plain Rust sum of its rows; and
//! `T::offset([i, j])` and `a.at([i, j])` in Rust code generic over `T`.

use parray::prelude::*;

parray! {
    // Three storages of one logical 64x32 matrix: row-major, column-major, 2x2 blocks.
    pub paged float [64][32] ROWS;
    pub paged float [32][64] COLS_STORE;
    pub float [#COLS_STORE_1][#COLS_STORE_0] COLS;
    pub paged float [2][2][32][16] BLOCKS_STORE;
    pub float [[#BLOCKS_STORE_0][#BLOCKS_STORE_2]][[#BLOCKS_STORE_1][#BLOCKS_STORE_3]] BLOCKS;
    pub dmem float [64][32] DROWS;
    pub dmem float [32][64] DCOLS_STORE;
    pub float [#DCOLS_STORE_1][#DCOLS_STORE_0] DCOLS;
    pub dmem float [2][2][32][16] DBLOCKS_STORE;
    pub float [[#DBLOCKS_STORE_0][#DBLOCKS_STORE_2]][[#DBLOCKS_STORE_1][#DBLOCKS_STORE_3]] DBLOCKS;
    pub paged float [64] SUMS;
    pub dmem float [64] DSUMS;
    pub pthd [4] CPU;
    pub cuda(float* a, float* sums) [2][32] GPU;
}

/// Row sums of any 64-row matrix type, one CPU thread per 16 rows.
fn sum_rows_pthd<T: DataType<Elem = f32>>(
    a: &Array<T>,
    sums: &mut Array<SUMS>,
) -> parray::Result<()> {
    detour!(<T> CPU {
        let rows = $dim(T_0)$ / $size(CPU)$;
        for r in 0..rows {
            let i = $tid$ * rows + r;
            let mut s = 0.0f32;
            for j in 0..$dim(T_1)$ {
                s += a[$T[i][j]$];
            }
            sums[$SUMS[i]$] = s;
        }
    })
}

/// Row sums on a cuda grid, one thread per row.
fn sum_rows_cuda<T: DataType<Elem = f32>>(
    a: &Array<T>,
    sums: &mut Array<DSUMS>,
) -> parray::Result<()> {
    detour!(<T> GPU(a, sums) {
        let mut s = 0.0f32;
        for j in 0..$dim(T_1)$ {
            s += a[$T[$tid$][j]$];
        }
        sums[$DSUMS[$tid$]$] = s;
    })
}

/// The value of element (i, j) of the test matrix.
fn value(i: usize, j: usize) -> f32 {
    ((i * 37 + j * 11) % 97) as f32 - 48.0
}

fn expected() -> Vec<f32> {
    (0..64)
        .map(|i| (0..32).map(|j| value(i, j)).sum())
        .collect()
}

/// Fills a storage array through the logical type `V` with host code generic over `V`.
fn fill<V: DataType<Elem = f32>, S: DataType<Elem = f32>>(s: &mut Array<S>) -> parray::Result<()> {
    let mut host = vec![f32::NAN; S::extent()];
    host! {<V>
        for i in 0..$dim(V_0)$ {
            for j in 0..$dim(V_1)$ {
                host[$V[i][j]$] = value(i, j);
            }
        }
    }
    s.copy_from_slice(&host)
}

fn on_pthd<V: DataType<Elem = f32> + ViewOf<S>, S: DataType<Elem = f32>>() -> parray::Result<()> {
    let mut store = Array::<S>::new()?;
    fill::<V, S>(&mut store)?;
    let mut sums = SUMS::create()?;
    sum_rows_pthd(store.view::<V>(), &mut sums)?;
    assert_eq!(sums.to_vec()?, expected(), "pthd on {}", V::NAME);
    Ok(())
}

fn on_cuda<V: DataType<Elem = f32> + ViewOf<S>, S: DataType<Elem = f32>>() -> parray::Result<()> {
    let mut store = Array::<S>::new()?;
    fill::<V, S>(&mut store)?;
    let mut sums = DSUMS::create()?;
    sum_rows_cuda(store.view::<V>(), &mut sums)?;
    assert_eq!(sums.to_vec()?, expected(), "cuda on {}", V::NAME);
    Ok(())
}

#[test]
fn one_generic_pthd_body_on_three_layouts() -> parray::Result<()> {
    on_pthd::<ROWS, ROWS>()?;
    on_pthd::<COLS, COLS_STORE>()?;
    on_pthd::<BLOCKS, BLOCKS_STORE>()
}

#[test]
fn one_generic_cuda_body_on_three_layouts() -> parray::Result<()> {
    on_cuda::<DROWS, DROWS>()?;
    on_cuda::<DCOLS, DCOLS_STORE>()?;
    on_cuda::<DBLOCKS, DBLOCKS_STORE>()
}

/// Rust code generic over the type writes offsets and elements as for a named type
/// (README): `V::offset([i, j])` and `a.at([i, j])`, the same as `V::offset_of(&[i, j])`
/// and the form `$V[i][j]$`.
fn offsets_as_named<V: DataType<Elem = f32> + ViewOf<S>, S: DataType<Elem = f32>>(
) -> parray::Result<()> {
    let mut store = Array::<S>::new()?;
    fill::<V, S>(&mut store)?;
    let a = store.view::<V>();
    for i in 0..V::dims()[0] {
        for j in 0..V::dims()[1] {
            let form = host! {<V> $V[i][j]$ };
            assert_eq!(V::offset([i, j]), V::offset_of(&[i, j]), "{}", V::NAME);
            assert_eq!(V::offset([i, j]), form, "{}", V::NAME);
            assert_eq!(a.at([i, j]), value(i, j), "{}", V::NAME);
        }
    }
    Ok(())
}

#[test]
fn generic_code_writes_offsets_as_for_a_named_type() -> parray::Result<()> {
    offsets_as_named::<ROWS, ROWS>()?;
    offsets_as_named::<COLS, COLS_STORE>()?;
    offsets_as_named::<BLOCKS, BLOCKS_STORE>()
}

parray! {
    pub paged float [8][8][8] CUBE;
}

#[test]
fn a_type_of_another_rank_is_a_clear_error() {
    let cube = CUBE::create().unwrap();
    let mut sums = SUMS::create().unwrap();
    let err = sum_rows_pthd(&cube, &mut sums).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "`T` cannot be CUBE: it has 3 top-level dimensions, but `$T[...]$` gives 2 indices"
        ),
        "{err}"
    );
}

/// A subprogram generic over its element (3.10, "Element parameters"): one body, called
/// with `bf16`, `half` and `float` and a layout of each, doubles every element; each
/// result is checked against the inputs doubled on the host.
mod element_parameter {
    use parray::prelude::*;
    use parray::{bf16, f16, DataType, Num};

    subprog! {
        /// `db = 2 da` for `da` of the type `T` (N x M of the element `E`) and `db` of `U`
        /// (N x M of `E`), each of any layout; `db`'s elements in row-major order.
        pub fn doubled<E, T, U>(da, db) -> parray::Result<Vec<E>> {
            parray! {
                cuda(E* a, E* b) [1][dim(T_0)] ROW;
                dmem E [dim(T_0)][dim(T_1)] CHECK;
            }
            detour!(ROW(da, db) {
                for j in 0..$dim(T_1)$ {
                    b[$U[$tid$][j]$] = a[$T[$tid$][j]$] * (2.0 as E);
                }
            })?;
            let mut rows = CHECK::create()?;
            parray::copy::copy(&*db, &mut rows)?;
            let out: Vec<E> = rows.to_vec()?;
            Ok(out)
        }
    }

    parray! {
        paged bf16 [16][24] H16;
        dmem bf16 [2][2][8][12] B16_STORE;
        bf16 [[#B16_STORE_0][#B16_STORE_2]][[#B16_STORE_1][#B16_STORE_3]] B16;
        dmem bf16 [16][24] R16;
        paged half [16][24] HH;
        dmem half [24][16] TH_STORE;
        half [#TH_STORE_1][#TH_STORE_0] TH;
        dmem half [16][24] RH;
        paged float [16][24] HF;
        dmem float [16][24] RF;
    }

    /// The inputs (i * 24 + j) / 8, exact in each element, in `S` seen as `V`; their doubles.
    fn run<E, H, V, S, R>(
        doubled: impl FnOnce(&Array<S>, &mut Array<R>) -> parray::Result<Vec<E>>,
    ) -> parray::Result<()>
    where
        E: Num + parray::Element + std::fmt::Debug,
        H: DataType<Elem = E>,
        V: DataType<Elem = E> + parray::ViewOf<S>,
        S: DataType<Elem = E>,
        R: DataType<Elem = E>,
    {
        let values: Vec<E> = (0..16 * 24).map(|x| E::from_f32(x as f32 / 8.0)).collect();
        let mut h = Array::<H>::new()?;
        h.as_mut_slice()?.copy_from_slice(&values);
        let mut a = Array::<S>::new()?;
        parray::copy::copy(&h, a.view_mut::<V>())?;
        let mut b = Array::<R>::new()?;
        let got = doubled(&a, &mut b)?;
        let want: Vec<E> = values
            .iter()
            .map(|v| E::from_f32(v.to_f32() * 2.0))
            .collect();
        assert_eq!(got, want);
        Ok(())
    }

    #[test]
    fn one_subprogram_runs_on_each_element() -> parray::Result<()> {
        run::<bf16, H16, B16, B16_STORE, R16>(|a, b| doubled!(<bf16, B16, R16>(a, b)))?;
        run::<f16, HH, TH, TH_STORE, RH>(|a, b| doubled!(<half, TH, RH>(a, b)))?;
        run::<f32, HF, RF, RF, RF>(|a, b| doubled!(<float, RF, RF>(a, b)))
    }
}
