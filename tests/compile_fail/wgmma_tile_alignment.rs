// A swizzle acts on absolute address bits, so a wgmma's 128B-swizzled tile must start at
// a multiple of 1024 bytes from its shared array's, or (K-major) at a k-step of 16-byte
// units within its atom's first row (`t + 16 * s`, s < 4): a start in the atom's second
// row (`t + 64`, 128 bytes) would read every row with the next row's XOR, a compile error
// at the tile naming the starts it may have.
use parray::prelude::*;

parray! {
    cuda(float* d) [1][[4][8][4]] G;
    smem bf16 [2][[8][8]][[8 ^ T_1_1][8]] T;
    bf16 [#T_1][[2#T_2_0][#T_2_1]] A;
    smem bf16 [[1][8]][[8 ^ BT_0_1][8]] BT;
    bf16 [[2#BT_1_0][#BT_1_1]][#BT_0] B;
    rmem float [1][2][#G_1_0][#G_1_1][#G_1_2][2] ACC_REGS;
    float [[#ACC_REGS_2][#ACC_REGS_1][#ACC_REGS_3]][[#ACC_REGS_0][#ACC_REGS_4][#ACC_REGS_5]] ACC;
    dmem float [128] D;
}

fn main() -> parray::Result<()> {
    let mut d = D::create()?;
    detour!(G(&mut d) {
        let t = T::create();
        let bt = BT::create();
        let acc = ACC_REGS::create();
        #mma ACC(acc) += A(t + 64) * B(bt);
        d[$tid$] = acc[0];
    })?;
    Ok(())
}
