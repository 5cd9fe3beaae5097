// `#mma` checks each fragment type's layout against mma.sync m16n8k16's, element by
// element: `FA` written row-then-column numbers a lane's registers v1 * 4 + v2 * 2 + v0,
// not the ISA's v0 + 2 v1 + 4 v2 (its registers 2 and 4 swapped), and `FB_T` is B stored
// n x k instead of k x n. Each error is at the type's name and says how to declare it.
use parray::prelude::*;

parray! {
    cuda(float* d) [1][[4][8][4]] G;
    rmem bf16 [[2][#G_1_1]][[2][#G_1_2][2]] FA;
    rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS;
    bf16 [[#FA_REGS_1][#FA_REGS_2]][[#FA_REGS_0][#FA_REGS_3][#FA_REGS_4]] FA_ISA;
    rmem bf16 [[2][#G_1_2][2]][#G_1_1] FB;
    rmem bf16 [#G_1_1][[2][#G_1_2][2]] FB_T;
    rmem float [[2][#G_1_1]][[#G_1_2][2]] FC;
    dmem float [128] D;
}

fn main() -> parray::Result<()> {
    let mut d = D::create()?;
    detour!(G(&mut d) {
        let fa = FA::create();
        let fb = FB::create();
        let fc = FC::create();
        #mma FC(fc) += FA(fa) * FB(fb);
        let fbt = FB_T::create();
        #mma FC(fc) += FA_ISA(fa) * FB_T(fbt);
        d[$tid$] = fc[0];
    })?;
    Ok(())
}
