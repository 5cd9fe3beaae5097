// A subprogram that moves a pointer by the digits of its view `[[K/64][64]#T_1]` (a k-tile,
// then a column of it), called with four strips of 48 columns: the k-tile of columns
// 64..127 straddles the second and third strips, and a pointer moved so reaches other
// elements. The error is at the type argument and names the storage and the element.
use parray::prelude::*;

subprog! {
    fn tiles<T>(m) {
        parray! {
            const K = dim(T_1);
            cuda(float* m) [1][dim(T_0)] ROWS;
            dmem float [#T_0][[K/64][64]#T_1] TL;
        }
        detour!(ROWS(m) {
            let row = m + $TL[$tid_1$][0]$;
            for kt in 0..$dim(TL_1_0)$ {
                let tile = row + $TL_1_0[kt]$;
                for c in 0..64 {
                    tile[$TL_1_1[c]$] = 1.0f32;
                }
            }
        })
    }
}

parray! {
    dmem float [4][8][48] STRIPS_STORE;
    float [#STRIPS_STORE_1][[#STRIPS_STORE_0][#STRIPS_STORE_2]] STRIPS;
    dmem float [2][8][64] HALVES_STORE;
    float [#HALVES_STORE_1][[#HALVES_STORE_0][#HALVES_STORE_2]] HALVES;
}

fn main() -> parray::Result<()> {
    let mut halves = HALVES_STORE::create()?;
    tiles!(<HALVES>(&mut halves))?;
    let mut strips = STRIPS_STORE::create()?;
    tiles!(<STRIPS>(&mut strips))?;
    Ok(())
}
