// `#mma async` issues a wgmma that completes at `#mma wait D(d);`: until then only more
// issues may run (nothing reads the accumulator or changes a tile), the wait is in the
// same block, and an issue is not inside a branch. mma.sync has no asynchronous form.
use parray::prelude::*;

parray! {
    cuda(float* d) [1][[4][8][4]] G;
    smem bf16 [[8][8]][[8 ^ T_0_1][8]] T;
    bf16 [#T_0][[2#T_1_0][#T_1_1]] A;
    smem bf16 [[1][8]][[8 ^ BT_0_1][8]] BT;
    bf16 [[2#BT_1_0][#BT_1_1]][#BT_0] B;
    rmem float [1][2][#G_1_0][#G_1_1][#G_1_2][2] ACC_REGS;
    float [[#ACC_REGS_2][#ACC_REGS_1][#ACC_REGS_3]][[#ACC_REGS_0][#ACC_REGS_4][#ACC_REGS_5]] ACC;
    rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS;
    bf16 [[#FA_REGS_1][#FA_REGS_2]][[#FA_REGS_0][#FA_REGS_3][#FA_REGS_4]] FA;
    rmem bf16 [[2][#G_1_2][2]][#G_1_1] FB;
    rmem float [[2][#G_1_1]][[#G_1_2][2]] FC;
    dmem float [128] D;
}

fn main() -> parray::Result<()> {
    let mut d = D::create()?;
    detour!(G(&mut d) {
        let t = T::create();
        let bt = BT::create();
        let acc = ACC_REGS::create();
        #mma async ACC(acc) += A(t) * B(bt);
        d[$tid$] = acc[0];
        #mma wait ACC(acc);
    })?;
    detour!(G(&mut d) {
        let t = T::create();
        let bt = BT::create();
        let acc = ACC_REGS::create();
        #mma async ACC(acc) += A(t) * B(bt);
    })?;
    detour!(G(&mut d) {
        let t = T::create();
        let bt = BT::create();
        let acc = ACC_REGS::create();
        if $tid$ < 128 {
            #mma async ACC(acc) += A(t) * B(bt);
        }
        #mma wait ACC(acc);
        d[$tid$] = acc[0];
    })?;
    detour!(G(&mut d) {
        let fa = FA_REGS::create();
        let fb = FB::create();
        let fc = FC::create();
        #mma async FC(fc) += FA(fa) * FB(fb);
        d[$tid$] = fc[0];
    })?;
    Ok(())
}
