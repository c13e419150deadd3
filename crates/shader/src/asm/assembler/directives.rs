//! The directives: procedures and blocks, uniforms and constants, inputs, outputs and the
//! geometry-shader declaration.

use super::operands::parse_swizzle;
use super::*;

impl Assembler {
    pub(super) fn directive(&mut self, command: Span, name: &str, mut args: Args) -> AsmResult<()> {
        let args = &mut args;
        match name {
            "proc" => self.dir_proc(command, args),
            "else" => self.dir_else(command, args),
            "end" => self.dir_end(command, args),
            "alias" => self.dir_alias(command, args),
            "fvec" => self.dir_uniform(command, args, UniformKind::Float),
            "ivec" => self.dir_uniform(command, args, UniformKind::Int),
            "bool" => self.dir_uniform(command, args, UniformKind::Bool),
            "constf" => self.dir_const(command, args, UniformKind::Float),
            "consti" => self.dir_const(command, args, UniformKind::Int),
            "constfa" => self.dir_constfa(command, args),
            "in" => self.dir_in(command, args),
            "out" => self.dir_out(command, args),
            "entry" => {
                let entry = self.next_space(args, command)?;
                self.no_more(args)?;
                if !is_identifier(entry.text) {
                    return self.error(entry, format!("invalid identifier: {}", entry));
                }
                self.dvle().entrypoint = entry.text.to_string();
                Ok(())
            }
            "nodvle" => {
                self.no_more(args)?;
                self.dvle().nodvle = true;
                Ok(())
            }
            "gsh" => self.dir_gsh(command, args),
            "setf" => self.dir_set(command, args, UniformKind::Float),
            "seti" => self.dir_set(command, args, UniformKind::Int),
            "setb" => self.dir_setb(command, args),
            _ => self.error(command, format!("invalid instruction: {}", command)),
        }
    }

    pub(super) fn dir_proc(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next(args, command)?;
        self.no_more(args)?;
        if let Some(&(start, _)) = self.procs.get(name.text) {
            // The files of one SHBIN share their procedures (picasso's rule): two files that
            // each define `main` are one program with two `main`s, not two programs.
            let first = self
                .origins
                .get(start)
                .map_or_else(String::new, |at| format!(", its code starts at {at}"));
            return self.error(
                name,
                format!(
                    "proc already exists: {name}{first} (the files of one SHBIN share their \
                     procedures: give each its own name)"
                ),
            );
        }
        self.open(
            command,
            Block::Proc {
                name: name.text.to_string(),
            },
        )
    }

    pub(super) fn pad(&mut self, column: usize) {
        if self.auto_nop {
            self.emit(0x21 << 26);
        } else {
            self.warn(column, "a padding NOP is required here");
        }
    }

    /// Whether the last instruction is one that may not end a block.
    pub(super) fn ends_badly(&self, for_block: bool) -> bool {
        let Some(&last) = self.code.last() else {
            return false;
        };
        let opcode = last >> 26;
        matches!(opcode, 0x2C | 0x2D | 0x24 | 0x25 | 0x26)
            || (for_block && matches!(opcode, 0x20 | 0x23))
    }

    pub(super) fn dir_else(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        self.no_more(args)?;
        let Some(open) = self.stack.last().cloned() else {
            return self.error(command, ".else with unmatched IF");
        };
        match open.block {
            Block::If { else_start: None } => {}
            Block::If {
                else_start: Some(_),
            } => return self.error(command, "spurious .else"),
            _ => return self.error(command, ".else with unmatched IF"),
        }
        if self.last_was_end {
            self.pad(command.column);
            self.last_was_end = false;
        } else if self.ends_badly(false) || self.code.len() - open.pos < 2 {
            self.pad(command.column);
        }
        let here = self.code.len();
        if let Some(top) = self.stack.last_mut() {
            top.block = Block::If {
                else_start: Some(here),
            };
        }
        let word = &mut self.code[open.pos];
        *word = (*word & !(0xFFF << 10)) | ((here as u32 & 0xFFF) << 10);
        Ok(())
    }

    pub(super) fn dir_end(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        self.no_more(args)?;
        let Some(open) = self.stack.pop() else {
            return self.error(command, ".end with unmatched block");
        };
        let is_array = matches!(open.block, Block::ConstArray);
        if !is_array && self.last_was_end {
            self.pad(command.column);
            self.last_was_end = false;
        } else if !is_array && !self.code.is_empty() {
            let minimum = if matches!(open.block, Block::Proc { .. }) {
                1
            } else {
                2
            };
            if self.ends_badly(matches!(open.block, Block::For))
                || self.code.len() - open.pos < minimum
            {
                self.pad(command.column);
            }
        }
        let here = self.code.len();
        match open.block {
            Block::Proc { name } => {
                self.procs.insert(name, (open.pos, here - open.pos));
            }
            Block::For => {
                let word = &mut self.code[open.pos];
                *word = (*word & !(0xFFF << 10)) | (((here as u32).wrapping_sub(1) & 0xFFF) << 10);
                self.last_was_end = true;
            }
            Block::If { else_start } => {
                let word = &mut self.code[open.pos];
                match else_start {
                    None => *word = (*word & !(0xFFF << 10)) | ((here as u32 & 0xFFF) << 10),
                    // As picasso: the else length is ORed in unmasked.
                    Some(start) => *word = (*word & !0x3FF) | (here - start) as u32,
                }
                if let Some(start) = else_start
                    && here - start > 0xFF
                {
                    self.warn(
                        command.column,
                        "else block longer than 255 instructions: its count field overflows",
                    );
                }
                self.last_was_end = true;
            }
            Block::ConstArray => self.finish_const_array(command)?,
        }
        Ok(())
    }

    pub(super) fn finish_const_array(&mut self, command: Span) -> AsmResult<()> {
        let name = std::mem::take(&mut self.const_array_name);
        if self.aliases.contains_key(&name) {
            return self.error(
                command,
                format!("identifier already used: {}", excerpt(&name)),
            );
        }
        let mut values = std::mem::take(&mut self.const_array);
        if let Some(size) = self.const_array_size.take() {
            values.resize(values.len().max(size), [0.0; 4]);
        }
        if values.is_empty() {
            return self.error(
                command,
                format!(
                    "no elements have been specified in array '{}'",
                    excerpt(&name)
                ),
            );
        }
        let Some(pos) = self.space().float.local(values.len() as i32) else {
            return self.error(
                command,
                format!(
                    "not enough space for local constant array '{}'",
                    excerpt(&name)
                ),
            );
        };
        let dvle = self.dvle();
        if dvle.constants.len() + values.len() > MAX_CONSTANTS {
            return self.error(command, "too many local constants");
        }
        for (i, value) in values.into_iter().enumerate() {
            dvle.constants.push(Constant {
                reg: pos + i as i32,
                value: ConstantValue::Float(value),
            });
        }
        self.define(name, pos);
        Ok(())
    }

    pub(super) fn dir_alias(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next_space(args, command)?;
        let reg_text = self.next_space(args, name)?;
        self.no_more(args)?;
        if !is_identifier(name.text) || name.text.is_empty() {
            return self.error(name, format!("invalid alias name: {}", name));
        }
        let bytes = name.text.as_bytes();
        if bytes.len() >= 2 && b"ovrcibOVRCIB".contains(&bytes[0]) && bytes[1].is_ascii_digit() {
            return self.error(name, "cannot redefine register");
        }
        let reg = self.operand(reg_text, false)?;
        if self.aliases.contains_key(name.text) {
            return self.error(name, format!("identifier already used: {}", name));
        }
        self.aliases.insert(
            name.text.to_string(),
            Alias {
                reg: reg.reg,
                source: reg.source,
            },
        );
        Ok(())
    }

    pub(super) fn dir_uniform(
        &mut self,
        command: Span,
        args: &mut Args,
        kind: UniformKind,
    ) -> AsmResult<()> {
        let shared = !self.dvle().uses_gsh_space();
        while let Some(arg) = args.comma() {
            let (name, size) = match arg.text.find('[') {
                Some(open) => {
                    let Some(close) = arg.text[open..].find(']').map(|c| c + open) else {
                        return self.error(arg, format!("missing closing bracket: {}", arg));
                    };
                    let size_text = arg.slice(open + 1, close).trim();
                    let size = atoi(size_text.text);
                    if size < 1 {
                        return self.error(size_text, format!("invalid uniform size: {}", arg));
                    }
                    (arg.slice(0, open).trim(), size as i32)
                }
                None => (arg, 1),
            };
            if name.text.is_empty() || !is_identifier(name.text) {
                return self.error(name, format!("invalid uniform name: {}", name));
            }
            if self.aliases.contains_key(name.text) {
                return self.error(name, format!("identifier already used: {}", name));
            }
            let mut pos = None;
            if shared
                && let Some(existing) = self.global_uniforms.iter().find(|u| u.name == name.text)
            {
                if existing.kind != kind {
                    return self.error(name, format!("mismatched uniform type: {}", name));
                }
                if existing.size != size {
                    return self.error(
                        name,
                        format!(
                            "uniform '{}' previously declared as having size {}",
                            name.text, existing.size
                        ),
                    );
                }
                pos = Some(existing.pos);
            }
            let pos = match pos {
                Some(pos) => pos,
                None => {
                    if self.global_uniforms.len() == MAX_UNIFORMS {
                        return self.error(name, format!("too many global uniforms: {}", name));
                    }
                    match self.space().get(kind).global(size) {
                        Some(pos) => pos,
                        None => {
                            return self.error(
                                name,
                                format!("not enough uniform space: {}[{size}]", name),
                            );
                        }
                    }
                }
            };
            let uniform = Uniform {
                name: name.text.to_string(),
                pos,
                size,
                kind,
            };
            if shared {
                self.global_uniforms.push(uniform.clone());
            }
            if !name.text.starts_with('_') {
                let dvle = self.dvle();
                if dvle.uniforms.len() == MAX_UNIFORMS {
                    return self.error(name, format!("too many referenced uniforms: {}", name));
                }
                dvle.uniforms.push(uniform);
            }
            self.define(name.text.to_string(), pos);
        }
        let _ = command;
        Ok(())
    }

    /// `(x, y, z, w)` after a name: the four texts.
    pub(super) fn four_values<'a>(
        &self,
        args: &mut Args<'a>,
        at: Span,
    ) -> AsmResult<[Span<'a>; 4]> {
        let a = self.next(args, at)?;
        let b = self.next(args, a)?;
        let c = self.next(args, b)?;
        let rest = args.rest();
        let Some(close) = rest.text.find(')') else {
            return self.error(rest, "invalid syntax: missing ')'");
        };
        let d = rest.slice(0, close).trim();
        let trailing = rest.from(close + 1).trim();
        if !trailing.is_empty() {
            return self.error(trailing, format!("garbage found: {}", trailing));
        }
        *args = Args::new(rest.from(rest.text.len()));
        Ok([a, b, c, d])
    }

    pub(super) fn floats(&self, texts: [Span; 4]) -> AsmResult<[f32; 4]> {
        let mut values = [0f32; 4];
        for (value, text) in values.iter_mut().zip(texts) {
            match parse_float(text.text) {
                Some(v) => *value = v as f32,
                None => return self.error(text, format!("invalid number: {}", text)),
            }
        }
        Ok(values)
    }

    pub(super) fn ints(&self, texts: [Span; 4]) -> AsmResult<[u8; 4]> {
        let mut values = [0u8; 4];
        for (value, text) in values.iter_mut().zip(texts) {
            match parse_integer(text.text) {
                Some(v) => *value = (v & 0xFF) as u8,
                None => return self.error(text, format!("invalid integer: {}", text)),
            }
        }
        Ok(values)
    }

    pub(super) fn dir_const(
        &mut self,
        command: Span,
        args: &mut Args,
        kind: UniformKind,
    ) -> AsmResult<()> {
        let Some(name) = args.paren() else {
            return self.error(command, "missing parameter");
        };
        let texts = self.four_values(args, name)?;
        if self.aliases.contains_key(name.text) {
            return self.error(name, format!("identifier already used: {}", name));
        }
        if name.text.is_empty() || !is_identifier(name.text) {
            return self.error(name, format!("invalid identifier: {}", name));
        }
        let value = match kind {
            UniformKind::Float => ConstantValue::Float(self.floats(texts)?),
            _ => ConstantValue::Int(self.ints(texts)?),
        };
        let Some(pos) = self.space().get(kind).local(1) else {
            return self.error(
                name,
                format!("not enough space for local constant '{}'", name),
            );
        };
        let dvle = self.dvle();
        if dvle.constants.len() == MAX_CONSTANTS {
            return self.error(name, "too many local constants");
        }
        dvle.constants.push(Constant { reg: pos, value });
        self.define(name.text.to_string(), pos);
        Ok(())
    }

    pub(super) fn dir_constfa(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let in_array = matches!(
            self.stack.last(),
            Some(OpenBlock {
                block: Block::ConstArray,
                ..
            })
        );
        if !in_array {
            let declaration = self.next(args, command)?;
            self.no_more(args)?;
            let Some(open) = declaration.text.find('[') else {
                return self.error(
                    declaration,
                    format!("missing opening bracket: {}", declaration),
                );
            };
            let Some(close) = declaration.text[open..].find(']').map(|c| c + open) else {
                return self.error(
                    declaration,
                    format!("missing closing bracket: {}", declaration),
                );
            };
            let trailing = declaration.from(close + 1).trim();
            if !trailing.is_empty() {
                return self.error(trailing, format!("garbage found: {}", trailing));
            }
            let size_text = declaration.slice(open + 1, close).trim();
            self.const_array_size = None;
            if !size_text.is_empty() {
                let size = atoi(size_text.text);
                if size <= 0 {
                    return self.error(size_text, format!("invalid array size: {}", declaration));
                }
                self.const_array_size = Some(size as usize);
            }
            let name = declaration.slice(0, open).trim();
            if name.text.is_empty() || !is_identifier(name.text) {
                return self.error(name, format!("invalid array name: {}", name));
            }
            self.const_array_name = name.text.to_string();
            self.const_array.clear();
            return self.open(command, Block::ConstArray);
        }
        if self.const_array_size == Some(self.const_array.len()) {
            return self.error(
                command,
                format!(
                    "too many elements in the array, expected {}",
                    self.const_array.len()
                ),
            );
        }
        let rest = args.rest().trim();
        let Some(inner) = rest.text.strip_prefix('(') else {
            return self.error(rest, "invalid syntax: expected (x, y, z, w)");
        };
        let mut values = Args::new(rest.slice(1, 1 + inner.len()));
        let texts = self.four_values(&mut values, rest)?;
        let value = self.floats(texts)?;
        self.const_array.push(value);
        Ok(())
    }

    pub(super) fn dir_set(
        &mut self,
        command: Span,
        args: &mut Args,
        kind: UniformKind,
    ) -> AsmResult<()> {
        let Some(name) = args.paren() else {
            return self.error(command, "missing parameter");
        };
        let texts = self.four_values(args, name)?;
        let reg = self.operand(name, false)?;
        let value = match kind {
            UniformKind::Float => {
                if !(FLOAT_UNIFORM..INT_UNIFORM).contains(&reg.reg) {
                    return self.error(
                        name,
                        format!("invalid floating point vector uniform: {}", name),
                    );
                }
                ConstantValue::Float(self.floats(texts)?)
            }
            _ => {
                if !(INT_UNIFORM..INT_UNIFORM + 4).contains(&reg.reg) {
                    return self.error(name, format!("invalid integer vector uniform: {}", name));
                }
                ConstantValue::Int(self.ints(texts)?)
            }
        };
        let dvle = self.dvle();
        if dvle.constants.len() == MAX_CONSTANTS {
            return self.error(name, "too many local constants");
        }
        dvle.constants.push(Constant {
            reg: reg.reg,
            value,
        });
        Ok(())
    }

    pub(super) fn dir_setb(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next_space(args, command)?;
        let value_text = self.next_space(args, name)?;
        self.no_more(args)?;
        let reg = self.operand(name, false)?;
        if !(BOOL_UNIFORM..UNIFORM_END).contains(&reg.reg) {
            return self.error(name, format!("invalid boolean uniform: {}", name));
        }
        let value = match value_text.text.to_ascii_lowercase().as_str() {
            "true" | "on" | "1" => true,
            "false" | "off" | "0" => false,
            _ => {
                return self.error(value_text, format!("invalid bool value: {}", value_text));
            }
        };
        let dvle = self.dvle();
        if dvle.constants.len() == MAX_CONSTANTS {
            return self.error(name, "too many local constants");
        }
        dvle.constants.push(Constant {
            reg: reg.reg,
            value: ConstantValue::Bool(value),
        });
        Ok(())
    }

    pub(super) fn dir_in(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next_space(args, command)?;
        let reg_text = args.space();
        self.no_more(args)?;
        if name.text.is_empty() || !is_identifier(name.text) {
            return self.error(name, format!("invalid identifier: {}", name));
        }
        if self.aliases.contains_key(name.text) {
            return self.error(name, format!("identifier already used: {}", name));
        }
        let reg = match reg_text {
            Some(text) => {
                let reg = self.operand(text, false)?;
                if !(0..TEMP).contains(&reg.reg) {
                    return self.error(text, format!("invalid input register: {}", text));
                }
                reg.reg
            }
            None => match (0..16).find(|&n| self.dvle().input_mask & (1 << n) == 0) {
                Some(n) => n,
                None => return self.error(name, "too many inputs"),
            },
        };
        let dvle = self.dvle();
        if dvle.uniforms.len() == MAX_UNIFORMS {
            return self.error(name, "too many uniforms in DVLE");
        }
        dvle.input_mask |= 1 << reg;
        dvle.uniforms.push(Uniform {
            name: name.text.to_string(),
            pos: reg,
            size: 1,
            kind: UniformKind::Float,
        });
        self.define(name.text, reg);
        Ok(())
    }

    pub(super) fn dir_out(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let name = self.next_space(args, command)?;
        let type_text = self.next_space(args, name)?;
        let reg_text = args.space();
        self.no_more(args)?;
        let name = if name.text == "-" {
            None
        } else if name.text.is_empty() || !is_identifier(name.text) {
            return self.error(name, format!("invalid identifier: {}", name));
        } else {
            Some(name)
        };
        let mut register = None;
        let mut source = IDENTITY_SOURCE;
        let mut type_name = type_text;
        if let Some(text) = reg_text {
            let reg = self.operand(text, false)?;
            if !(0..self.dvle().max_output()).contains(&reg.reg) {
                return self.error(text, format!("invalid output register: {}", text));
            }
            register = Some(reg.reg);
            source = reg.source;
        } else if let Some(dot) = type_text.text.find('.') {
            let mask_text = type_text.from(dot + 1);
            type_name = type_text.slice(0, dot);
            match parse_swizzle(mask_text.text) {
                Some(selector) => source = selector << 1,
                None => {
                    return self.error(mask_text, format!("invalid output mask: {}", mask_text));
                }
            }
        }
        let column = reg_text.unwrap_or(type_text).column;
        let mask = self.mask_from_source(source, false, column);
        let Some(semantic) = output_semantic(type_name.text) else {
            return self.error(type_name, format!("invalid output type: {}", type_name));
        };
        let dvle = self.dvle();
        let register = match register {
            Some(reg) => {
                if dvle.output_used & ((mask as u64) << (4 * reg)) != 0 {
                    return self.error(
                        type_text,
                        "this output collides with another one previously defined",
                    );
                }
                Some(reg)
            }
            None => (0..dvle.max_output()).find(|&n| dvle.output_mask & (1 << n) == 0),
        };
        let Some(register) = register.filter(|_| dvle.outputs.len() < MAX_OUTPUTS) else {
            return self.error(type_text, "too many outputs");
        };
        if let Some(name) = name
            && self.aliases.contains_key(name.text)
        {
            return self.error(name, format!("identifier already used: {}", name));
        }
        if register >= 7 && semantic != DUMMY_OUTPUT {
            return self.error(
                type_text,
                format!("this register (o{register}) can only be a dummy output"),
            );
        }
        let dvle = self.dvle();
        dvle.outputs.push((semantic, register as u16, mask as u16));
        dvle.output_mask |= 1 << register;
        dvle.output_used |= (mask as u64) << (4 * register);
        if semantic == DUMMY_OUTPUT && dvle.uses_gsh_space() {
            dvle.merge = true;
        }
        if let Some(name) = name {
            self.define(name.text.to_string(), register);
        }
        Ok(())
    }

    pub(super) fn dir_gsh(&mut self, command: Span, args: &mut Args) -> AsmResult<()> {
        let Some(mode_text) = args.space() else {
            let dvle = self.dvle();
            dvle.geometry = true;
            dvle.compat_geometry = true;
            return Ok(());
        };
        let dvle = self.dvle();
        if dvle.geometry {
            return self.error(command, ".gsh had already been used");
        }
        if !dvle.constants.is_empty() || !dvle.uniforms.is_empty() || dvle.output_mask != 0 {
            return self.error(
                command,
                ".gsh must be used before any constant, uniform or output is declared",
            );
        }
        let mode = match mode_text.text.to_ascii_lowercase().as_str() {
            "point" => 0,
            "variable" | "subdivision" => 1,
            "fixed" | "particle" => 2,
            _ => {
                return self.error(
                    mode_text,
                    format!("invalid geometry shader mode: {}", mode_text),
                );
            }
        };
        self.dvle().geometry = true;
        self.dvle().gs_type = mode;
        let first_text = self.next_space(args, mode_text)?;
        let first = self.operand(first_text, false)?.reg;
        if !(FLOAT_UNIFORM..INT_UNIFORM).contains(&first) {
            return self.error(
                first_text,
                format!("invalid float uniform register: {}", first_text),
            );
        }
        self.spaces[1] = AllocBundle::geometry(first);
        let count = |this: &Self, text: Span| -> AsmResult<u8> {
            match parse_integer(text.text) {
                Some(n) if (0..=255).contains(&n) => Ok(n as u8),
                Some(n) => this.error(text, format!("Value out of range (0..255): {n}")),
                None => this.error(text, format!("Invalid value: {}", text)),
            }
        };
        match mode {
            0 => self.no_more(args)?,
            1 => {
                let number = self.next_space(args, first_text)?;
                self.no_more(args)?;
                let number = count(self, number)?;
                self.dvle().gs_variable_num = number;
            }
            _ => {
                let start_text = self.next_space(args, first_text)?;
                let number_text = self.next_space(args, start_text)?;
                self.no_more(args)?;
                let start = self.operand(start_text, false)?.reg;
                let number = count(self, number_text)?;
                if !(FLOAT_UNIFORM..INT_UNIFORM).contains(&start) {
                    return self.error(
                        start_text,
                        format!("invalid float uniform register: {}", start_text),
                    );
                }
                if start >= first {
                    return self.error(
                        start_text,
                        format!(
                            "specified location overlaps uniform allocation pool: {}",
                            start_text
                        ),
                    );
                }
                let dvle = self.dvle();
                dvle.gs_fixed_start = (start - FLOAT_UNIFORM) as u8;
                dvle.gs_fixed_num = number;
            }
        }
        Ok(())
    }
}

/// The semantic code of the `dummy` output.
pub const DUMMY_OUTPUT: u16 = 9;

pub(super) fn output_semantic(name: &str) -> Option<u16> {
    Some(match name.to_ascii_lowercase().as_str() {
        "pos" | "position" => 0,
        "nquat" | "normalquat" => 1,
        "clr" | "color" => 2,
        "tcoord0" | "texcoord0" => 3,
        "tcoord0w" | "texcoord0w" => 4,
        "tcoord1" | "texcoord1" => 5,
        "tcoord2" | "texcoord2" => 6,
        "view" => 8,
        "dummy" => DUMMY_OUTPUT,
        _ => return None,
    })
}
