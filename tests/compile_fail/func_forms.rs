// `$...$` forms in a function of the body language (`parray::funcs!`), each error at its
// token: a type not in scope, a dimension its type lacks, a thread index (the body's to
// pass in), a cuda body where a type of the same name as the function's is another
// declaration, and a cuda body calling a function whose forms name a type of sizes given
// at run time that is not in scope where the body is (the body names it, at the call). A
// type whose declaration was not built has its error there only.
use parray::prelude::*;

parray! {
    dmem float [4][8] M;
    const N;
    dmem float [N][8] R;
    dmem float [32] V;
    dmem float [0] K;
    cuda(float* v) [1][4] G;
}

mod other {
    parray::parray! {
        pub dmem float [8][4] M;
    }

    parray::funcs! {
        pub fn first(a: parray::Ptr<'_, f32>) -> f32 {
            a[$M[1][0]$]
        }
    }
}

parray::funcs! {
    fn not_in_scope(a: parray::Ptr<'_, f32>, i: usize) -> f32 {
        a[$Q[i]$]
    }
}

parray::funcs! {
    fn no_such_dimension(a: parray::Ptr<'_, f32>) -> f32 {
        a[$dim(M_2)$]
    }

    fn thread_index(a: parray::Ptr<'_, f32>) -> f32 {
        a[$M[$tid$][0]$]
    }

    fn not_built(a: parray::Ptr<'_, f32>, i: usize) -> f32 {
        a[$K[i]$]
    }

    fn run_time(a: parray::Ptr<'_, f32>, i: usize) -> f32 {
        a[$R[i][0]$]
    }
}

// Imports the function, not its run-time type `R`.
mod elsewhere {
    use super::{run_time, G, V};
    use parray::prelude::*;

    pub fn call() {
        let mut v = V::create().unwrap();
        let _ = detour!(G(&mut v) {
            v[$tid$] = run_time(v, $tid$);
        });
    }
}

fn main() {
    use other::first;
    let mut v = V::create().unwrap();
    let _ = detour!(G(&mut v) {
        v[$M[0][$tid$]$] = first(v);
    });
    elsewhere::call();
}
