//! The float24 rules run at translation time: [`HostLanes`] implements the rules' lane
//! abstraction ([`shader::float24::lanes::Lanes`]) with IR expressions, so the shader code a
//! translation contains is those rules, each stated once in the model, emitted as code. A
//! value is a register's four lanes as f32 bit patterns (`uvec4`); a mask a `bvec4`.

use shader::float24::Precision;
use shader::float24::lanes::{Elements, Lanes};

use crate::ir::build::FnBuilder;
use crate::ir::{Expr, ExprId, Type};
use crate::{double, primitives};

/// The rules' lanes as IR, in one function being built.
pub struct HostLanes<'a, 'm> {
    /// Where the code goes.
    pub b: &'a mut FnBuilder<'m>,
    /// The precision the program is translated for.
    pub precision: Precision,
}

impl HostLanes<'_, '_> {
    /// The one value every lane of `v` holds, when `v` is known to hold one (a constant or a
    /// broadcast lane): the broadcasting instructions then compute once.
    fn uniform_lane(&mut self, v: ExprId) -> Option<ExprId> {
        match self.b.expr(v).clone() {
            Expr::Constant(bits) if bits.iter().all(|&x| x == bits[0]) => {
                Some(self.b.uint(bits[0]))
            }
            Expr::Swizzle(inner, lanes)
                if lanes.len() == 4 && lanes.iter().all(|&l| l == lanes[0]) =>
            {
                Some(self.b.lane(inner, lanes[0]))
            }
            Expr::Construct(parts)
                if parts.len() == 4
                    && parts.iter().all(|&p| p == parts[0])
                    && self.b.ty(parts[0]).lanes == 1 =>
            {
                Some(parts[0])
            }
            _ => None,
        }
    }

    /// `f` on one lane when both operands are uniform, broadcast; else on the vectors.
    fn maybe_scalar(
        &mut self,
        a: ExprId,
        c: ExprId,
        f: impl Fn(&mut FnBuilder, ExprId, ExprId) -> ExprId,
    ) -> ExprId {
        if let (Some(x), Some(y)) = (self.uniform_lane(a), self.uniform_lane(c)) {
            let r = f(self.b, x, y);
            return self.b.broadcast(r, 4);
        }
        f(self.b, a, c)
    }

    fn each_lane(&mut self, a: ExprId, f: impl Fn(&mut FnBuilder, ExprId) -> ExprId) -> ExprId {
        if let Some(x) = self.uniform_lane(a) {
            let r = f(self.b, x);
            return self.b.broadcast(r, 4);
        }
        let lanes: Vec<ExprId> = (0..4)
            .map(|l| {
                let x = self.b.lane(a, l);
                f(self.b, x)
            })
            .collect();
        self.b.construct(Type::UVEC4, &lanes)
    }
}

impl Elements for HostLanes<'_, '_> {
    type Float = ExprId;
    type Bits = ExprId;
    type Mask = ExprId;

    fn bits_of(&mut self, v: ExprId) -> ExprId {
        v
    }
    fn float_of(&mut self, v: ExprId) -> ExprId {
        v
    }
    fn splat_bits(&mut self, bits: u32) -> ExprId {
        self.b.splat(Type::UVEC4, bits)
    }
    fn and(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.and(a, c)
    }
    fn or(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.or(a, c)
    }
    fn add_bits(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.add(a, c)
    }
    fn shift_right(&mut self, a: ExprId, amount: u32) -> ExprId {
        self.b.shr_k(a, amount)
    }
    fn below(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.lt(a, c)
    }
    fn above(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.gt(a, c)
    }
    fn is_nan(&mut self, a: ExprId) -> ExprId {
        // From the bits: a compiler may assume that floats are never NaN.
        let magnitude = self.b.and_k(a, 0x7FFF_FFFF);
        self.b.gt_k(magnitude, primitives::INFINITY)
    }
    fn is_number(&mut self, a: ExprId) -> ExprId {
        let magnitude = self.b.and_k(a, 0x7FFF_FFFF);
        self.b.le_k(magnitude, primitives::INFINITY)
    }
    fn both(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.and(a, c)
    }
    fn either(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.or(a, c)
    }
    fn select(&mut self, mask: ExprId, a: ExprId, c: ExprId) -> ExprId {
        self.b.select(mask, a, c)
    }
    fn fadd(&mut self, a: ExprId, c: ExprId) -> ExprId {
        let p = self.precision;
        self.maybe_scalar(a, c, |b, x, y| primitives::add(b, p, x, y))
    }
    fn fmul(&mut self, a: ExprId, c: ExprId) -> ExprId {
        let p = self.precision;
        self.maybe_scalar(a, c, |b, x, y| primitives::mul(b, p, x, y))
    }
    fn fdiv(&mut self, a: ExprId, c: ExprId) -> ExprId {
        let f = primitives::div_exact(self.b);
        if let (Some(x), Some(y)) = (self.uniform_lane(a), self.uniform_lane(c)) {
            let r = self.b.call(f, &[x, y]);
            return self.b.broadcast(r, 4);
        }
        let lanes: Vec<ExprId> = (0..4)
            .map(|l| {
                let x = self.b.lane(a, l);
                let y = self.b.lane(c, l);
                self.b.call(f, &[x, y])
            })
            .collect();
        self.b.construct(Type::UVEC4, &lanes)
    }
    fn sqrt(&mut self, a: ExprId) -> ExprId {
        let f = primitives::sqrt_exact(self.b);
        self.each_lane(a, |b, x| b.call(f, &[x]))
    }
    fn floor(&mut self, a: ExprId) -> ExprId {
        primitives::floor(self.b, a)
    }
    fn exp2_each(&mut self, a: ExprId) -> ExprId {
        let f = double::exp2(self.b);
        self.each_lane(a, |b, x| b.call(f, &[x]))
    }
    fn log2_each(&mut self, a: ExprId) -> ExprId {
        let f = double::log2(self.b);
        self.each_lane(a, |b, x| b.call(f, &[x]))
    }
    fn splat(&mut self, value: f32) -> ExprId {
        self.splat_bits(value.to_bits())
    }
}

impl Lanes for HostLanes<'_, '_> {
    fn exp2_first(&mut self, a: ExprId) -> ExprId {
        let f = double::exp2(self.b);
        let x = self.b.lane(a, 0);
        let r = self.b.call(f, &[x]);
        self.b.broadcast(r, 4)
    }
    fn log2_first(&mut self, a: ExprId) -> ExprId {
        let f = double::log2(self.b);
        let x = self.b.lane(a, 0);
        let r = self.b.call(f, &[x]);
        self.b.broadcast(r, 4)
    }
    fn broadcast(&mut self, a: ExprId, lane: usize) -> ExprId {
        if self.uniform_lane(a).is_some() {
            return a;
        }
        let l = lane as u8;
        self.b.swizzle(a, &[l, l, l, l])
    }
    fn with_lane(&mut self, a: ExprId, lane: usize, value: f32) -> ExprId {
        let value = self.b.uint(value.to_bits());
        let parts: Vec<ExprId> = (0..4u8)
            .map(|l| {
                if l as usize == lane {
                    value
                } else {
                    self.b.lane(a, l)
                }
            })
            .collect();
        self.b.construct(Type::UVEC4, &parts)
    }
}
