//! The fields of a PATCH body, checked one at a time onto the resource as it will become
//! ([`Patch`]): a field left out keeps its value, `null` clears a field that may be absent,
//! every field that fails is reported, and one failure refuses the whole patch.

use serde_json::{Map, Value};

use super::Ctx;
use crate::error::Loc;

/// A PATCH body's fields at `loc`, and whether all those checked so far passed.
pub(crate) struct Patch<'m> {
    fields: &'m Map<String, Value>,
    loc: Loc,
    ok: bool,
}

impl<'m> Patch<'m> {
    /// The fields of the object at `loc`.
    pub(crate) fn new(fields: &'m Map<String, Value>, loc: &Loc) -> Self {
        Patch {
            fields,
            loc: loc.clone(),
            ok: true,
        }
    }

    /// Field `key`, when sent, checked by `check` into `slot`.
    pub(crate) fn set<T>(
        &mut self,
        c: &mut Ctx,
        key: &str,
        slot: &mut T,
        check: impl FnOnce(&mut Ctx, &'m Value, &Loc) -> Option<T>,
    ) {
        if let Some(v) = self.fields.get(key) {
            match check(c, v, &self.loc.at(key)) {
                Some(x) => *slot = x,
                None => self.ok = false,
            }
        }
    }

    /// Field `key`, when sent, checked by `check` into `slot`; `null` clears it.
    pub(crate) fn set_or_clear<T>(
        &mut self,
        c: &mut Ctx,
        key: &str,
        slot: &mut Option<T>,
        check: impl FnOnce(&mut Ctx, &'m Value, &Loc) -> Option<T>,
    ) {
        match self.fields.get(key) {
            Some(Value::Null) => *slot = None,
            Some(v) => match check(c, v, &self.loc.at(key)) {
                Some(x) => *slot = Some(x),
                None => self.ok = false,
            },
            None => {}
        }
    }

    /// Field `key`, when sent, checked by `check`, which changes nothing here (a field that
    /// cannot change, or an object with fields of its own) and answers whether it passed.
    pub(crate) fn check(
        &mut self,
        c: &mut Ctx,
        key: &str,
        check: impl FnOnce(&mut Ctx, &'m Value, &Loc) -> bool,
    ) {
        if let Some(v) = self.fields.get(key) {
            self.ok &= check(c, v, &self.loc.at(key));
        }
    }

    /// String field `key`, which cannot change: sending `current` again is allowed, another
    /// value is refused with `message`.
    pub(crate) fn fixed(&mut self, c: &mut Ctx, key: &str, current: &str, message: &str) {
        self.check(c, key, |c, v, l| match c.string(v, l) {
            Some(s) if s != current => {
                c.value_error(l, message);
                false
            }
            Some(_) => true,
            None => false,
        });
    }

    /// Whether every field sent passed its check.
    pub(crate) fn passed(&self) -> bool {
        self.ok
    }
}
