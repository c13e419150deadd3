//! The kept helpers' SPIR-V, written once and replayed into every later module
//! (docs/gpu-shaders.md, "Translation cost").
//!
//! A module numbers its ids across all its functions, and declares each type and constant on
//! its first use, so a helper's words depend on what the module held before it. A helper is
//! therefore recorded in a writer of its own whose ids start at [`BASE`], with the origin of
//! every id in the order it was made: one of the function's own results, a type or constant
//! (by its key), a module-level variable, the function itself or a callee. Replaying makes
//! the same requests of the real module in the same order (a fresh id, or the type or
//! constant by its key, which declares it where it is new), so the ids and the declarations
//! are exactly those writing the helper anew would give, and the recorded words need only
//! their ids mapped. A unit test compares whole modules both ways.

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use super::function::FunctionWriter;
use super::{TypeKey, Writer};
use crate::ir::{Function, Member, Module, Stmt, Type};

/// The first id of a recording: above any literal a function's code holds (those are lane
/// numbers, storage classes and control masks; a helper with a switch or a comment, whose
/// literals are addresses or line numbers, is not kept).
pub(super) const BASE: u32 = 1 << 30;

/// The most words kept.
const LIMIT: usize = 8 << 20;

/// Where an id of a recording comes from.
#[derive(Clone, Debug)]
pub(super) enum Origin {
    /// A result, label, parameter or variable of the function.
    Local,
    /// So many [`Origin::Local`]s in a row (how a recording keeps them).
    Locals(u32),
    /// The function's own id.
    Own,
    /// The function's callee of this place in its callee list.
    Callee(usize),
    /// A module-level id, by its place in [`Writer::global_ids`].
    Global(usize),
    Type(TypeKey),
    Constant(Type, [u32; 4]),
    /// An `OpConstantNull` of the array type (a recorded id): a local array's initialiser.
    Null(u32),
}

/// A helper as recorded.
struct Recorded {
    origins: Vec<Origin>,
    /// The ids the origins make.
    ids: usize,
    code: Vec<u32>,
    names: Vec<u32>,
    annotations: Vec<u32>,
}

impl Recorded {
    fn words(&self) -> usize {
        self.origins.len() + self.code.len() + self.names.len() + self.annotations.len()
    }
}

#[derive(Default)]
struct Cache {
    /// By the kept function's address, and whether the module is a geometry shader's.
    by_function: FxHashMap<(usize, bool), Arc<Recorded>>,
    words: usize,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

fn key(member: &Member, geometry: bool) -> (usize, bool) {
    (Arc::as_ptr(&member.function) as usize, geometry)
}

/// Whether `function`'s code holds only small literals and no source lines.
fn replayable(function: &Function) -> bool {
    fn block(stmts: &[Stmt]) -> bool {
        stmts.iter().all(|stmt| match stmt {
            Stmt::Switch(..) | Stmt::Comment(_) => false,
            Stmt::If(_, then, otherwise) => block(then) && block(otherwise),
            Stmt::Loop(body) => block(body),
            _ => true,
        })
    }
    block(&function.body)
}

/// Writes `member` (of `module`) into `w` as the function `id` calling `callee_ids`: replayed
/// from its recording when it is a kept helper, recorded first if it was not before.
pub(super) fn write(w: &mut Writer, module: &Module, member: &Member, id: u32, callee_ids: &[u32]) {
    let geometry = w.geometry.is_some();
    let found = CACHE.lock().ok().and_then(|cache| {
        cache
            .as_ref()
            .and_then(|cache| cache.by_function.get(&key(member, geometry)).cloned())
    });
    let recorded = match found {
        Some(recorded) => recorded,
        None => {
            let keep =
                replayable(&member.function) && crate::ir::build::kept::holds(&member.function);
            if !keep {
                FunctionWriter::new(w, module, &member.function, callee_ids).write(id);
                return;
            }
            let recorded = Arc::new(record(w, module, member));
            if let Ok(mut guard) = CACHE.lock() {
                let cache = guard.get_or_insert_with(Cache::default);
                if cache.words + recorded.words() <= LIMIT {
                    cache.words += recorded.words();
                    cache
                        .by_function
                        .insert(key(member, geometry), recorded.clone());
                }
            }
            recorded
        }
    };
    replay(&recorded, w, id, callee_ids);
}

/// `member` written in a writer of its own, like `w` in what the function reads of it.
fn record(w: &Writer, module: &Module, member: &Member) -> Recorded {
    let mut r = Writer::new();
    r.bound = BASE;
    r.origins = Some(Vec::new());
    r.geometry = w.geometry;
    r.listing = w.listing;
    let mut globals = w.global_ids();
    for (place, id) in globals.iter_mut().enumerate() {
        *id = r.id();
        r.tag(*id, Origin::Global(place));
    }
    r.set_global_ids(globals);
    let own = r.id();
    r.tag(own, Origin::Own);
    let callees: Vec<u32> = (0..member.callees.len())
        .map(|place| {
            let id = r.id();
            r.tag(id, Origin::Callee(place));
            id
        })
        .collect();
    FunctionWriter::new(&mut r, module, &member.function, &callees).write(own);
    // Most ids are the function's own: runs of them replay as one request.
    let mut origins: Vec<Origin> = Vec::new();
    for origin in r.origins.take().unwrap_or_default() {
        match (origin, origins.last_mut()) {
            (Origin::Local, Some(Origin::Locals(n))) => *n += 1,
            (Origin::Local, _) => origins.push(Origin::Locals(1)),
            (other, _) => origins.push(other),
        }
    }
    Recorded {
        ids: (r.bound - BASE) as usize,
        origins,
        code: r.code,
        names: r.names,
        annotations: r.annotations,
    }
}

/// Makes `recorded`'s requests of `w` in order, then appends its words with their ids mapped.
fn replay(recorded: &Recorded, w: &mut Writer, own: u32, callee_ids: &[u32]) {
    let globals = w.global_ids();
    let mut ids: Vec<u32> = Vec::with_capacity(recorded.ids);
    let at = |ids: &[u32], id: u32| ids[(id - BASE) as usize];
    for origin in &recorded.origins {
        let id = match origin {
            Origin::Local => w.id(),
            Origin::Locals(n) => {
                let first = w.bound;
                w.bound += n;
                ids.extend(first..first + n);
                continue;
            }
            Origin::Own => own,
            Origin::Callee(place) => callee_ids[*place],
            Origin::Global(place) => globals[*place],
            Origin::Type(key) => {
                let key = match key {
                    TypeKey::Vector(scalar, lanes) => TypeKey::Vector(at(&ids, *scalar), *lanes),
                    TypeKey::Array(element, length) => {
                        TypeKey::Array(at(&ids, *element), at(&ids, *length))
                    }
                    TypeKey::Pointer(class, pointee) => {
                        TypeKey::Pointer(*class, at(&ids, *pointee))
                    }
                    TypeKey::Function(result, params) => TypeKey::Function(
                        at(&ids, *result),
                        params.iter().map(|&p| at(&ids, p)).collect(),
                    ),
                    other => other.clone(),
                };
                w.type_id(key)
            }
            Origin::Constant(ty, bits) => w.constant(*ty, *bits),
            Origin::Null(array) => w.null(at(&ids, *array)),
        };
        ids.push(id);
    }
    w.code.reserve(recorded.code.len());
    w.code.extend(
        (recorded.code.iter()).map(|&word| if word >= BASE { at(&ids, word) } else { word }),
    );
    // Names and decorations: only the target (the word after the opcode) is an id.
    for (section, words) in [
        (&mut w.names, &recorded.names),
        (&mut w.annotations, &recorded.annotations),
    ] {
        let start = section.len();
        section.extend_from_slice(words);
        let mut k = start;
        while k < section.len() {
            let count = (section[k] >> 16).max(1) as usize;
            section[k + 1] = at(&ids, section[k + 1]);
            k += count;
        }
    }
}

/// The recorded words of every helper kept, for a test's bound.
#[cfg(test)]
pub(super) fn kept_words() -> usize {
    CACHE
        .lock()
        .ok()
        .and_then(|cache| cache.as_ref().map(|c| c.words))
        .unwrap_or(0)
}
