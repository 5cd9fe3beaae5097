use parray::prelude::*;

parray! {
    const H;                                         // half the side, from the input
    #parray {paged float [[2][H]][[2][H]]} M         // rows and columns in halves
    #parray {pthd [2][2]} MY_TA                      // 4 CPU threads
}

fn multiply(a: &Array<M>, b: &Array<M>, c: &mut Array<M>) -> parray::Result<()> {
    detour!(MY_TA {                                  // each thread computes a quarter of C
        for i in 0..$dim_0_1(M)$ {
            for j in 0..$dim_1_1(M)$ {
                let pa = a + $M[[$tid_0$][i]][0]$;
                let pb = b + $M[0][[$tid_1$][j]]$;
                let mut cvalue = 0.0f32;
                for k in 0..$dim_1(M)$ {
                    cvalue += pa[$M[0][k]$] * pb[$M[k][0]$];
                }
                c[$M[[$tid_0$][i]][[$tid_1$][j]]$] = cvalue;
            }
        }
    })
}

fn main() -> parray::Result<()> {
    let arg = std::env::args().nth(1);
    let side: usize = arg.map_or(128, |a| a.parse().expect("a side"));
    H.bind(side / 2)?; // M is 2H x 2H: every type sized by H follows
    let (mut a, mut b, mut c) = (M::create()?, M::create()?, M::create()?);
    let n = M::dims()[0];
    for i in 0..n {
        for j in 0..n {
            a.set([i, j], (i + 2 * j) as f32);
            b.set([i, j], if i == j { 3.0 } else { 0.0 }); // 3 times the identity
        }
    }
    multiply(&a, &b, &mut c)?;
    for i in 0..n {
        for j in 0..n {
            assert_eq!(c.at([i, j]), 3.0 * (i + 2 * j) as f32);
        }
    }
    println!("check: ok");
    Ok(())
}
