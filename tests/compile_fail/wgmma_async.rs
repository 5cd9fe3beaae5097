// `#mma async` issues a wgmma, and each run of them is one group that a `#mma wait N
// D(d);` completes once at most N later groups are in flight. While a group is in flight
// no statement names its accumulator (a loop may carry one across its back-edge), a body
// does not end with one in flight, a group issued in a branch is completed in it, a
// `break` does not leave a loop with one in flight, and a wait names the accumulator of
// the groups in flight and a number. mma.sync has no asynchronous form.
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
        #mma wait 0 ACC(acc);
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
        #mma wait 0 ACC(acc);
        d[$tid$] = acc[0];
    })?;
    detour!(G(&mut d) {
        let fa = FA_REGS::create();
        let fb = FB::create();
        let fc = FC::create();
        #mma async FC(fc) += FA(fa) * FB(fb);
        d[$tid$] = fc[0];
    })?;
    // A k-loop whose last group is in flight after `#mma wait 1`: the accumulator is
    // not read there, and a loop that carries the group reads it after a `#mma wait 0`.
    detour!(G(&mut d) {
        let t = T::create();
        let bt = BT::create();
        let acc = ACC_REGS::create();
        for k in 0..4 {
            #mma async ACC(acc) += A(t) * B(bt);
            #mma wait 1 ACC(acc);
            d[$tid$] += acc[k];
        }
        #mma wait 0 ACC(acc);
    })?;
    // Another name of the accumulator's registers is the accumulator.
    detour!(G(&mut d) {
        let t = T::create();
        let bt = BT::create();
        let acc = ACC_REGS::create();
        let regs = acc;
        for _k in 0..4 {
            #mma async ACC(acc) += A(t) * B(bt);
            #mma wait 1 ACC(acc);
        }
        regs[0] = 0.0f32;
        #mma wait 0 ACC(acc);
    })?;
    detour!(G(&mut d) {
        let t = T::create();
        let bt = BT::create();
        let acc = ACC_REGS::create();
        for k in 0..4 {
            #mma async ACC(acc) += A(t) * B(bt);
            if k == 2 {
                break;
            }
            #mma wait 0 ACC(acc);
        }
        d[$tid$] = acc[0];
    })?;
    detour!(G(&mut d) {
        let t = T::create();
        let bt = BT::create();
        let acc = ACC_REGS::create();
        let other = ACC_REGS::create();
        #mma async ACC(acc) += A(t) * B(bt);
        #mma wait 0 ACC(other);
        #mma wait ACC(acc);
    })?;
    Ok(())
}
