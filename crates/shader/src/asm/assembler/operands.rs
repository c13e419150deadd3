//! Operands: registers, swizzles, masks and relative indices as picasso parses them, which
//! slot accepts which register, and the operand descriptors (picasso's sharing and the
//! MAD-below-32 rule).

use super::*;

impl Assembler {
    /// Parses a register operand: `-name[index+offset].swizzle`, an alias or a register.
    pub(super) fn operand(&mut self, span: Span, allow_index: bool) -> AsmResult<Operand> {
        let mut text = span;
        let mut source = IDENTITY_SOURCE;
        if let Some(rest) = text.text.strip_prefix('-') {
            text = text.slice(1, 1 + rest.len());
            source |= 1;
        }
        let mut offset = 0;
        let mut index = 0;
        let mut name = text;
        let mut after = None;
        if let Some(open) = text.text.find('[') {
            let Some(close) = text.text[open..].find(']').map(|c| c + open) else {
                return self.error(span, format!("missing closing bracket: {}", span));
            };
            name = text.slice(0, open);
            after = Some(text.from(close + 1));
            let inside = text.slice(open + 1, close).trim();
            let (register, number) = match inside.text.split_once('+') {
                Some((register, number)) => (Some(register.trim()), number.trim()),
                None if index_register(inside.text) > 0 => (Some(inside.text), ""),
                None => (None, inside.text),
            };
            if let Some(register) = register {
                if !allow_index {
                    return self.error(
                        inside,
                        format!("index register not allowed here: {}", inside),
                    );
                }
                index = index_register(register);
                if index == 0 {
                    return self.error(
                        inside,
                        format!("invalid index register: {}", excerpt(register)),
                    );
                }
            }
            if !number.is_empty() {
                match number.parse::<i32>() {
                    Ok(n) if n >= 0 => offset = n,
                    _ => {
                        return self.error(
                            inside,
                            format!("invalid register offset: {}", excerpt(number)),
                        );
                    }
                }
            }
        }
        // The swizzle follows the first '.' after the brackets (or in the name).
        let swizzle_text = match after {
            None => name.text.find('.').map(|dot| {
                let swizzle = name.from(dot + 1);
                name = name.slice(0, dot);
                swizzle
            }),
            Some(after) => match after.text.find('.') {
                Some(dot) if after.text[..dot].trim().is_empty() => Some(after.from(dot + 1)),
                None if after.text.trim().is_empty() => None,
                _ => {
                    return self.error(after, format!("garbage after the register: {}", after));
                }
            },
        };
        if let Some(swizzle) = swizzle_text {
            match parse_swizzle(swizzle.text) {
                Some(selector) => source = (selector << 1) | (source & 1),
                None => {
                    return self.error(swizzle, format!("invalid swizzling mask: {}", swizzle));
                }
            }
        }
        if let Some(alias) = self.aliases.get(name.text).copied() {
            let negate = (source ^ alias.source) & 1;
            let user = (source >> 1) as u8;
            let base = Swizzle((alias.source >> 1) as u8);
            let composed = Swizzle::from_components(std::array::from_fn(|lane| {
                base.component(Swizzle(user).component(lane))
            }));
            return Ok(Operand {
                reg: alias.reg + offset,
                source: negate | ((composed.0 as u32) << 1),
                index,
            });
        }
        let bytes = name.text.as_bytes();
        let valid_prefix =
            bytes.len() >= 2 && b"ovrcib".contains(&bytes[0]) && bytes[1].is_ascii_digit();
        let number = if valid_prefix {
            name.text[1..].parse::<i32>().ok().filter(|n| *n <= 255)
        } else {
            None
        };
        let Some(number) = number else {
            return self.error(name, format!("invalid register: {}", name));
        };
        let reg = match bytes[0] {
            b'o' => {
                if number >= self.dvle().max_output() {
                    return self.error(name, format!("invalid output register: {}", name));
                }
                number
            }
            b'v' if number < 16 => number,
            b'r' if number < 16 => TEMP + number,
            b'c' if number < 96 => FLOAT_UNIFORM + number,
            b'i' if number < 4 => INT_UNIFORM + number,
            b'b' if number < 16 => BOOL_UNIFORM + number,
            kind => {
                let what = match kind {
                    b'v' => "input",
                    b'r' => "temporary",
                    b'c' => "floating-point vector uniform",
                    b'i' => "integer vector uniform",
                    _ => "boolean uniform",
                };
                return self.error(name, format!("invalid {what} register: {}", name));
            }
        };
        if index != 0 && !(FLOAT_UNIFORM..INT_UNIFORM).contains(&reg) {
            return self.error(
                span,
                "index register not allowed with this kind of register",
            );
        }
        Ok(Operand {
            reg: reg + offset,
            source,
            index,
        })
    }

    /// A destination register and its write mask (opdesc bit order: x = bit 3).
    pub(super) fn destination(&mut self, span: Span) -> AsmResult<(i32, u32)> {
        let operand = self.operand(span, false)?;
        if !(0..TEMP + 16).contains(&operand.reg) {
            return self.error(span, format!("invalid destination register: {}", span));
        }
        Ok((
            operand.reg,
            self.mask_from_source(operand.source, true, span.column),
        ))
    }

    /// The component mask a swizzle names. Warns when the letters are not in x, y, z, w order
    /// (a destination mask cannot reorder).
    pub(super) fn mask_from_source(&mut self, source: u32, reverse: bool, column: usize) -> u32 {
        let swizzle = Swizzle((source >> 1) as u8);
        let components: [usize; 4] = std::array::from_fn(|lane| swizzle.component(lane));
        if components.windows(2).any(|pair| pair[0] > pair[1]) {
            self.warn(
                column,
                "arbitrary swizzling has no effect for destination mask",
            );
        }
        components
            .iter()
            .fold(0, |mask, &c| mask | 1 << if reverse { 3 - c } else { c })
    }

    /// A source in a wide (7-bit) slot: v0-v15, r0-r15 or c0-c95.
    pub(super) fn wide(&self, span: Span, operand: &Operand, n: usize) -> AsmResult<()> {
        if (0..INT_UNIFORM).contains(&operand.reg) {
            Ok(())
        } else {
            self.error(
                span,
                format!(
                    "invalid source{n} register: {}: source{n} accepts v0-v15, r0-r15 and c0-c95{}",
                    operand_name(span, operand),
                    flow_only(operand)
                ),
            )
        }
    }

    /// A source in a narrow (5-bit) slot: v0-v15 or r0-r15. `other_uniform` says whether the
    /// instruction's wide source is a uniform already; `advice` says where a uniform goes
    /// instead (`; ...`).
    pub(super) fn narrow(
        &self,
        span: Span,
        operand: &Operand,
        n: usize,
        other_uniform: bool,
        advice: &str,
    ) -> AsmResult<()> {
        if !(0..FLOAT_UNIFORM).contains(&operand.reg) {
            let why = if operand.reg >= INT_UNIFORM {
                flow_only(operand).to_string()
            } else if other_uniform {
                "; an instruction reads at most one uniform (c0-c95): copy the other into a \
                 temporary first (mov r0, ...)"
                    .to_string()
            } else {
                advice.to_string()
            };
            return self.error(
                span,
                format!(
                    "invalid source{n} register: {}: source{n} accepts v0-v15 and r0-r15{why}",
                    operand_name(span, operand)
                ),
            );
        }
        if operand.index != 0 {
            return self.error(
                span,
                format!(
                    "index register not allowed in source{n}: only the uniform (c0-c95) operand can be indexed"
                ),
            );
        }
        Ok(())
    }

    pub(super) fn different_inputs(&self, at: Span, regs: &[i32]) -> AsmResult<()> {
        let inputs: Vec<i32> = regs.iter().copied().filter(|&r| r < TEMP).collect();
        if inputs.windows(2).any(|w| w[0] != w[1]) || (inputs.len() == 3 && inputs[0] != inputs[2])
        {
            return self.error(
                at,
                "source operands must be different input registers (v0..v15)",
            );
        }
        Ok(())
    }

    /// Finds a compatible descriptor (equal on the bits both users care about) or appends one.
    pub(super) fn opdesc(&mut self, at: Span, opcode: u32, desc: u32, mask: u32) -> AsmResult<u32> {
        let mask = mask & !unused_selector_bits(opcode, desc);
        for (index, (existing, existing_mask)) in self.opdescs.iter_mut().enumerate() {
            let common = mask & *existing_mask;
            if desc & common == *existing & common {
                *existing = (*existing & !mask) | (desc & mask);
                *existing_mask |= mask;
                return Ok(index as u32);
            }
        }
        if self.opdescs.len() == isa::OPDESC_COUNT {
            return self.error(
                at,
                format!(
                    "too many operand descriptors (limit is {})",
                    isa::OPDESC_COUNT
                ),
            );
        }
        self.opdescs.push((desc, mask));
        Ok(self.opdescs.len() as u32 - 1)
    }

    /// MAD/MADI can only address descriptors 0-31: move a higher one into the lowest slot no
    /// MAD uses yet, renumbering the format-1 instructions that used either slot.
    pub(super) fn mad_opdesc(&mut self, at: Span, index: u32) -> AsmResult<u32> {
        let index = if index >= isa::MAD_OPDESC_LIMIT as u32 {
            let Some(free) = (0..32).find(|slot| self.mad_used & (1 << slot) == 0) else {
                return self.error(at, "opdesc allocation error");
            };
            self.opdescs.swap(free as usize, index as usize);
            for word in &mut self.code {
                let opcode = *word >> 26;
                if opcode < 0x20 || opcode & !1 == 0x2E {
                    let current = *word & 0x7F;
                    let renumbered = if current == free {
                        index
                    } else if current == index {
                        free
                    } else {
                        current
                    };
                    *word = (*word & !0x7F) | renumbered;
                }
            }
            free
        } else {
            index
        };
        self.mad_used |= 1 << index;
        Ok(index)
    }
}

/// `a0`/`a0.x` → 1, `a1`/`a0.y` → 2, `a2`/`lcnt`/`aL` → 3, anything else 0.
pub(super) fn index_register(name: &str) -> u32 {
    match name.to_ascii_lowercase().as_str() {
        "a0" | "a0.x" => 1,
        "a1" | "a0.y" => 2,
        "a2" | "lcnt" | "al" => 3,
        _ => 0,
    }
}

/// A swizzle of 0-4 letters (`xyzw`, `rgba` or `stpq`); missing lanes repeat the last letter
/// (none at all reads as `x`). Returns the 8-bit selector.
pub(super) fn parse_swizzle(text: &str) -> Option<u32> {
    if text.len() > 4 {
        return None;
    }
    let mut components = [0usize; 4];
    let mut last = 0;
    for (lane, c) in text.chars().enumerate() {
        last = match c.to_ascii_lowercase() {
            'x' | 'r' | 's' => 0,
            'y' | 'g' | 't' => 1,
            'z' | 'b' | 'p' => 2,
            'w' | 'a' | 'q' => 3,
            _ => return None,
        };
        components[lane] = last;
    }
    for slot in components.iter_mut().skip(text.len()) {
        *slot = last;
    }
    Some(Swizzle::from_components(components).0 as u32)
}

/// The opcode of a mnemonic the parser accepted, from the ISA's table.
pub(super) fn opcode_of(name: &str) -> u32 {
    isa::opcode_named(name).unwrap_or_else(|| unreachable!("no opcode for {name}"))
}

/// The selector bits of a descriptor that `opcode` never reads, given the destination mask in
/// `desc` (picasso's `optimizeOpdesc`): they do not take part in descriptor sharing.
pub(super) fn unused_selector_bits(opcode: u32, desc: u32) -> u32 {
    let lane_bits = |lane: usize| 3u32 << (6 - 2 * lane);
    let (mut unused1, mut unused2, mut unused3) = (0, 0, 0);
    match opcode {
        // ADD MUL SGE SLT FLR MAX MIN MOV MAD: lanes the destination mask does not write.
        0x00 | 0x08 | 0x09 | 0x0A | 0x0B | 0x0C | 0x0D | 0x13 | 0x38 => {
            for lane in 0..4 {
                if desc & (8 >> lane) == 0 {
                    unused1 |= lane_bits(lane);
                }
            }
            unused2 = unused1;
            unused3 = unused1;
        }
        0x01 => {
            unused1 = lane_bits(3);
            unused2 = lane_bits(3);
        }
        0x03 => unused1 = lane_bits(3),
        0x05 | 0x06 | 0x0E | 0x0F => unused1 = lane_bits(1) | lane_bits(2) | lane_bits(3),
        0x12 | 0x2E => {
            if opcode == 0x12 {
                if desc & 8 == 0 {
                    unused1 |= lane_bits(0);
                }
                if desc & 4 == 0 {
                    unused1 |= lane_bits(1);
                }
            }
            unused1 |= lane_bits(2) | lane_bits(3);
        }
        _ => {}
    }
    (unused1 << 5) | (unused2 << 14) | (unused3 << 23)
}
