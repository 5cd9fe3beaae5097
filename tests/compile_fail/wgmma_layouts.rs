// `#mma` of shared tiles (a wgmma) derives each tile's matrix descriptor from its type and
// checks it element by element: `ROWS`, rows of 32 bytes one after another, is no
// canonical layout (a core matrix's rows are 16 bytes apart, a swizzled tile's XOR
// moves its chunks); `ACC_ROWS` has rows 16 t2 + 2 t1 + v1, not the ISA's 16 t2 + 8 v1 +
// t1; `FBK`, a `float` B stored k x n (n contiguous), is MN-major, which a tf32 wgmma
// does not read. Each error is at the type's name and says what to declare.
use parray::prelude::*;

parray! {
    cuda(float* d) [1][[4][8][4]] G;
    smem bf16 [64][16] ROWS;
    smem bf16 [[8][8]][[8 ^ T_0_1][8]] T;
    bf16 [#T_0][[2#T_1_0][#T_1_1]] A;
    smem bf16 [[1][8]][[8 ^ BT_0_1][8]] BT;
    bf16 [[2#BT_1_0][#BT_1_1]][#BT_0] B;
    rmem float [1][2][#G_1_0][#G_1_1][#G_1_2][2] ACC_REGS;
    float [[#ACC_REGS_2][#ACC_REGS_1][#ACC_REGS_3]][[#ACC_REGS_0][#ACC_REGS_4][#ACC_REGS_5]] ACC;
    rmem float [[#G_1_0][#G_1_1][2]][[#G_1_2][2]] ACC_ROWS;
    smem float [[8][8]][[8 ^ FT_0_1][4]] FT;
    float [#FT_0][[2#FT_1_0][#FT_1_1]] FA;
    smem float [8][8] FBK;
    dmem float [128] D;
}

fn main() -> parray::Result<()> {
    let mut d = D::create()?;
    detour!(G(&mut d) {
        let rows = ROWS::create();
        let t = T::create();
        let bt = BT::create();
        let acc = ACC_REGS::create();
        #mma ACC(acc) += ROWS(rows) * B(bt);
        let acc2 = ACC_ROWS::create();
        #mma ACC_ROWS(acc2) += A(t) * B(bt);
        let ft = FT::create();
        let fbk = FBK::create();
        #mma ACC(acc) += FA(ft) * FBK(fbk);
        d[$tid$] = acc[0] + acc2[0];
    })?;
    Ok(())
}
