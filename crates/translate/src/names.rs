//! The names a DVLE gives registers (its uniform and output tables), for the comments of a
//! translation: each statement's comment is the instruction's listing followed by the names of
//! the registers it mentions (docs/gpu-shaders.md, "Reading a translation").

use shader::shbin::{Dvle, UniformRegister};

/// Register names: `c4` → `modelview[0]`, `o0` → `position`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    /// By register as the listing spells it (`c4`, `i0`, `b3`, `v1`, `o0`).
    named: Vec<(String, String)>,
}

impl Names {
    /// No names: comments are the plain listing.
    pub fn none() -> Names {
        Names::default()
    }

    /// The names `dvle`'s tables give.
    pub fn of_dvle(dvle: &Dvle) -> Names {
        let mut named = Vec::new();
        for entry in &dvle.uniforms {
            let count = entry.last.saturating_sub(entry.first);
            for index in entry.first..=entry.last.max(entry.first) {
                let Some(register) = UniformRegister::from_unified(index) else {
                    continue;
                };
                let name = if count == 0 {
                    entry.name.clone()
                } else {
                    format!("{}[{}]", entry.name, index - entry.first)
                };
                named.push((register.to_string(), name));
            }
        }
        for output in &dvle.outputs {
            let register = format!("o{}", output.register);
            let semantic = output.semantic.name().to_string();
            match named.iter_mut().find(|(r, _)| *r == register) {
                Some((_, name)) if !name.split('/').any(|n| n == semantic) => {
                    name.push('/');
                    name.push_str(&semantic);
                }
                Some(_) => {}
                None => named.push((register, semantic)),
            }
        }
        Names { named }
    }

    /// The name of `register` (as the listing spells it), if the DVLE gives one.
    pub fn name(&self, register: &str) -> Option<&str> {
        self.named
            .iter()
            .find(|(r, _)| r == register)
            .map(|(_, n)| n.as_str())
    }

    /// Every named register, in table order.
    pub fn all(&self) -> impl Iterator<Item = (&str, &str)> {
        self.named.iter().map(|(r, n)| (r.as_str(), n.as_str()))
    }

    /// `listing` followed by the names of the registers it mentions: `dp4 o0.x, c4, r0`
    /// becomes `dp4 o0.x, c4, r0  (o0 position, c4 modelview[0])`.
    pub fn annotate(&self, listing: &str) -> String {
        let mut found: Vec<String> = Vec::new();
        for token in listing.split(|c: char| !c.is_ascii_alphanumeric()) {
            if let Some(name) = self.name(token) {
                let note = format!("{token} {name}");
                if !found.contains(&note) {
                    found.push(note);
                }
            }
        }
        if found.is_empty() {
            listing.to_string()
        } else {
            format!("{listing}  ({})", found.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_gain_the_names_of_their_registers_once_each() {
        let names = Names {
            named: vec![
                ("c4".into(), "modelview[0]".into()),
                ("o0".into(), "position".into()),
            ],
        };
        assert_eq!(
            names.annotate("dp4 o0.x, c4, c40"),
            "dp4 o0.x, c4, c40  (o0 position, c4 modelview[0])"
        );
        assert_eq!(
            names.annotate("add r0, c4, c4.x"),
            "add r0, c4, c4.x  (c4 modelview[0])"
        );
        assert_eq!(names.annotate("nop"), "nop");
    }
}
