//! The instructions: one function per format, each parsing its operands and writing the word
//! (the inverted forms, the flow targets and their relocations).

use super::operands::opcode_of;
use super::*;

impl Assembler {
    pub(super) fn format1(
        &mut self,
        command: Span,
        name: &str,
        args: &mut Args,
        invertible: bool,
    ) -> AsmResult<()> {
        let dest_text = self.next(args, command)?;
        let src1_text = self.next(args, dest_text)?;
        let src2_text = self.next(args, src1_text)?;
        self.no_more(args)?;
        let (dest, dest_mask) = self.destination(dest_text)?;
        let src1 = self.operand(src1_text, true)?;
        let src2 = self.operand(src2_text, true)?;
        let base_name = name.trim_end_matches('i');
        let base = opcode_of(base_name);
        let inverted = invertible && src1.reg < FLOAT_UNIFORM && src2.reg >= FLOAT_UNIFORM;
        let uniform1 = src1.reg >= FLOAT_UNIFORM;
        if inverted {
            self.narrow(src1_text, &src1, 1, true, "")?;
            self.wide(src2_text, &src2, 2)?;
        } else {
            self.wide(src1_text, &src1, 1)?;
            let advice = format!(
                "; a uniform (c0-c95) goes in source1 ({name} has no inverted form, and its \
                 operands commute): swap the operands"
            );
            self.narrow(src2_text, &src2, 2, uniform1, &advice)?;
        }
        self.different_inputs(command, &[src1.reg, src2.reg])?;
        let desc = dest_mask | src1.source << 4 | src2.source << 13;
        let index = self.opdesc(command, base, desc, opdesc_mask(true, 2))?;
        let word = if inverted {
            opcode_of(&format!("{base_name}i")) << 26
                | index
                | (src2.reg as u32) << 7
                | (src1.reg as u32) << 14
                | src2.index << 19
                | (dest as u32) << 21
        } else {
            base << 26
                | index
                | (src2.reg as u32) << 7
                | (src1.reg as u32) << 12
                | src1.index << 19
                | (dest as u32) << 21
        };
        self.emit(word);
        Ok(())
    }

    pub(super) fn format1u(&mut self, command: Span, name: &str, args: &mut Args) -> AsmResult<()> {
        let dest_text = self.next(args, command)?;
        let src1_text = self.next(args, dest_text)?;
        self.no_more(args)?;
        let (dest, dest_mask) = self.destination(dest_text)?;
        let src1 = self.operand(src1_text, true)?;
        self.wide(src1_text, &src1, 1)?;
        let opcode = opcode_of(name);
        let index = self.opdesc(
            command,
            opcode,
            dest_mask | src1.source << 4,
            opdesc_mask(true, 1),
        )?;
        self.emit(
            opcode << 26 | index | (src1.reg as u32) << 12 | src1.index << 19 | (dest as u32) << 21,
        );
        Ok(())
    }

    pub(super) fn mova(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let target = self.next(args, command)?;
        let src1_text = self.next(args, target)?;
        self.no_more(args)?;
        let mask = match target.text.to_ascii_lowercase().as_str() {
            "a0" | "a0.x" => 0b1000,
            "a1" | "a0.y" => 0b0100,
            "a01" | "a0.xy" => 0b1100,
            _ => {
                return self.error(
                    target,
                    format!("invalid destination register for mova: {}", target),
                );
            }
        };
        let src1 = self.operand(src1_text, true)?;
        self.wide(src1_text, &src1, 1)?;
        let index = self.opdesc(command, 0x12, mask | src1.source << 4, opdesc_mask(true, 1))?;
        self.emit(0x12 << 26 | index | (src1.reg as u32) << 12 | src1.index << 19);
        Ok(())
    }

    pub(super) fn cmp(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let src1_text = self.next(args, command)?;
        let x_text = self.next(args, src1_text)?;
        let y_text = self.next(args, x_text)?;
        let src2_text = self.next(args, y_text)?;
        self.no_more(args)?;
        let src1 = self.operand(src1_text, true)?;
        self.wide(src1_text, &src1, 1)?;
        let cmp_x = self.compare_op(x_text)?;
        let cmp_y = self.compare_op(y_text)?;
        let src2 = self.operand(src2_text, false)?;
        self.narrow(
            src2_text,
            &src2,
            2,
            src1.reg >= FLOAT_UNIFORM,
            "; a uniform (c0-c95) goes in source1: swap the operands and mirror the comparisons \
             (lt and gt, le and ge trade places; eq and ne stay)",
        )?;
        let index = self.opdesc(
            command,
            0x2E,
            src1.source << 4 | src2.source << 13,
            opdesc_mask(false, 2),
        )?;
        self.emit(
            0x2E << 26
                | index
                | (src2.reg as u32) << 7
                | (src1.reg as u32) << 12
                | src1.index << 19
                | cmp_y << 21
                | cmp_x << 24,
        );
        Ok(())
    }

    pub(super) fn compare_op(&self, span: Span) -> AsmResult<u32> {
        match span.text.to_ascii_lowercase().as_str() {
            "eq" => Ok(0),
            "ne" => Ok(1),
            "lt" => Ok(2),
            "le" => Ok(3),
            "gt" => Ok(4),
            "ge" => Ok(5),
            _ => self.error(span, format!("invalid conditional operator: {}", span)),
        }
    }

    pub(super) fn mad(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let dest_text = self.next(args, command)?;
        let src1_text = self.next(args, dest_text)?;
        let src2_text = self.next(args, src1_text)?;
        let src3_text = self.next(args, src2_text)?;
        self.no_more(args)?;
        let (dest, dest_mask) = self.destination(dest_text)?;
        let src1 = self.operand(src1_text, false)?;
        self.narrow(
            src1_text,
            &src1,
            1,
            false,
            "; a uniform (c0-c95) goes in source2 or source3 (mad d, a, b, c computes a * b + c: \
             swap a and b)",
        )?;
        let src2 = self.operand(src2_text, true)?;
        let src3 = self.operand(src3_text, true)?;
        let inverted = src2.reg < FLOAT_UNIFORM
            && (src3.reg >= FLOAT_UNIFORM || (src3.index != 0 && src2.index == 0));
        if inverted {
            self.narrow(src2_text, &src2, 2, true, "")?;
            self.wide(src3_text, &src3, 3)?;
        } else {
            self.wide(src2_text, &src2, 2)?;
            self.narrow(src3_text, &src3, 3, src2.reg >= FLOAT_UNIFORM, "")?;
        }
        self.different_inputs(command, &[src1.reg, src2.reg, src3.reg])?;
        let desc = dest_mask | src1.source << 4 | src2.source << 13 | src3.source << 22;
        let found = self.opdesc(command, 0x38, desc, opdesc_mask(true, 3))?;
        let index = self.mad_opdesc(command, found)?;
        let word = if inverted {
            0x30 << 26
                | index
                | (src3.reg as u32) << 5
                | (src2.reg as u32) << 12
                | (src1.reg as u32) << 17
                | src3.index << 22
                | (dest as u32) << 24
        } else {
            0x38 << 26
                | index
                | (src3.reg as u32) << 5
                | (src2.reg as u32) << 10
                | (src1.reg as u32) << 17
                | src2.index << 22
                | (dest as u32) << 24
        };
        self.emit(word);
        Ok(())
    }

    pub(super) fn target<'a>(&self, span: Span<'a>) -> AsmResult<Span<'a>> {
        if span.text.is_empty() || !is_identifier(span.text) {
            return self.error(span, format!("invalid target: {}", span));
        }
        Ok(span)
    }

    pub(super) fn relocation(&self, span: Span) -> Relocation {
        Relocation {
            at: self.code.len(),
            name: span.text.to_string(),
            location: self.location(span.column),
        }
    }

    pub(super) fn call(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next(args, command)?;
        self.no_more(args)?;
        let name = self.target(name)?;
        self.proc_relocations.push(self.relocation(name));
        self.emit(0x24 << 26);
        Ok(())
    }

    pub(super) fn open(&mut self, at: Span, block: Block) -> AsmResult<()> {
        if self.stack.len() == MAX_NESTING {
            return self.error(at, "too many nested blocks");
        }
        self.stack.push(OpenBlock {
            block,
            pos: self.code.len(),
        });
        Ok(())
    }

    pub(super) fn for_loop(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let reg_text = self.next(args, command)?;
        self.no_more(args)?;
        let reg = self.operand(reg_text, false)?;
        if !(INT_UNIFORM..BOOL_UNIFORM).contains(&reg.reg) {
            return self.error(
                reg_text,
                format!("invalid integer vector uniform: {}", reg_text),
            );
        }
        self.open(command, Block::For)?;
        self.emit(0x29 << 26 | ((reg.reg - INT_UNIFORM) as u32) << 22);
        Ok(())
    }

    /// A condition: `cmp.x`, `!cmp.y`, `a && b`, `a || b` (also `&`, `|`). Returns the bits
    /// 22-25 of a format-2 word.
    pub(super) fn condition(&self, span: Span) -> AsmResult<u32> {
        let mut flags = 1 << 24 | 1 << 25;
        let flag = |text: Span, flags: &mut u32| -> AsmResult<u32> {
            let trimmed = text.trim();
            let bangs = trimmed.text.len() - trimmed.text.trim_start_matches('!').len();
            let name = trimmed.text[bangs..].to_ascii_lowercase();
            let negation = (bangs & 1) as u32;
            match name.as_str() {
                "cmp.x" => {
                    *flags ^= negation << 25;
                    Ok(0)
                }
                "cmp.y" => {
                    *flags ^= negation << 24;
                    Ok(1)
                }
                _ => self.error(trimmed, format!("invalid condition register: {}", trimmed)),
            }
        };
        match span.text.find(['&', '|']) {
            Some(at) => {
                let kind = span.text.as_bytes()[at];
                let second_start = if span.text.as_bytes().get(at + 1) == Some(&kind) {
                    at + 2
                } else {
                    at + 1
                };
                let second = flag(span.from(second_start), &mut flags)?;
                let first = flag(span.slice(0, at), &mut flags)?;
                if first == second {
                    return self.error(span, "condition register checked twice");
                }
                if kind == b'&' {
                    flags |= 1 << 22;
                }
            }
            None => {
                let which = flag(span, &mut flags)?;
                flags |= (which + 2) << 22;
            }
        }
        Ok(flags)
    }

    pub(super) fn format2(&mut self, command: Span, name: &str, args: &mut Args) -> AsmResult<()> {
        let condition_text = self.next(args, command)?;
        let flags = self.condition(condition_text)?;
        let opcode = opcode_of(name);
        match name {
            "breakc" => self.no_more(args)?,
            "callc" | "jmpc" => {
                let target = self.next(args, condition_text)?;
                self.no_more(args)?;
                let target = self.target(target)?;
                let relocation = self.relocation(target);
                if name == "callc" {
                    self.proc_relocations.push(relocation);
                } else {
                    self.label_relocations.push(relocation);
                }
            }
            _ => {
                self.no_more(args)?;
                self.open(command, Block::If { else_start: None })?;
            }
        }
        self.emit(opcode << 26 | flags);
        Ok(())
    }

    pub(super) fn format3(&mut self, command: Span, name: &str, args: &mut Args) -> AsmResult<()> {
        let mut reg_text = self.next(args, command)?;
        let mut negation = 0;
        if let Some(rest) = reg_text.text.strip_prefix('!') {
            if name != "jmpu" {
                let what = if name == "callu" { "CALLU" } else { "IFU" };
                return self.error(
                    reg_text,
                    format!("Inverting the condition is not supported by {what}"),
                );
            }
            negation = 1;
            reg_text = reg_text.slice(1, 1 + rest.len());
        }
        let reg = self.operand(reg_text, false)?;
        if !(BOOL_UNIFORM..UNIFORM_END).contains(&reg.reg) {
            return self.error(reg_text, format!("invalid boolean uniform: {}", reg_text));
        }
        if name == "ifu" {
            self.no_more(args)?;
            self.open(command, Block::If { else_start: None })?;
        } else {
            let target = self.next(args, reg_text)?;
            self.no_more(args)?;
            let target = self.target(target)?;
            let relocation = self.relocation(target);
            if name == "callu" {
                self.proc_relocations.push(relocation);
            } else {
                self.label_relocations.push(relocation);
            }
        }
        self.emit(opcode_of(name) << 26 | ((reg.reg - BOOL_UNIFORM) as u32) << 22 | negation);
        Ok(())
    }

    pub(super) fn setemit(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let vertex_text = self.next(args, command)?;
        let flags_text = args.comma();
        self.no_more(args)?;
        let vertex = match parse_integer(vertex_text.text) {
            Some(v) if (0..=2).contains(&v) => v as u32,
            Some(v) => return self.error(vertex_text, format!("Value out of range (0..2): {v}")),
            None => return self.error(vertex_text, format!("Invalid value: {}", vertex_text)),
        };
        let (mut primitive, mut invert) = (false, false);
        if let Some(flags) = flags_text {
            let mut words = Args::new(flags);
            while let Some(flag) = words.space() {
                match flag.text.to_ascii_lowercase().as_str() {
                    "prim" | "primitive" => primitive = true,
                    "inv" | "invert" => invert = true,
                    _ => return self.error(flag, format!("unknown setemit flag: {}", flag)),
                }
            }
        }
        let dvle = self.dvle();
        if !dvle.geometry {
            dvle.geometry = true;
            dvle.compat_geometry = true;
        }
        self.emit(0x2B << 26 | (invert as u32) << 22 | (primitive as u32) << 23 | vertex << 24);
        Ok(())
    }
}
