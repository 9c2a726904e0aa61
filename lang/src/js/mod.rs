//! Server-side JavaScript, as mongod runs it for `$where`, `$function` and
//! `$accumulator`: an embedded QuickJS engine (through `rquickjs`), one
//! runtime per thread, sandboxed: its global object has the language's own
//! objects and the shell types below (`ObjectId`), nothing that reaches
//! files, sockets or processes.
//!
//! Each call is bounded: the runtime's heap by [`MEMORY_LIMIT`], its time
//! by the operation's `maxTimeMS` deadline and by `killOp` (the engine
//! polls [`crate::query::interrupt`] while it runs). A script that throws
//! fails the operation with mongod's JSInterpreterFailure (139).
//!
//! Values cross as mongod's shell shows them (`convert`): numbers as JS
//! numbers (a number coming back is a double), dates as `Date`, ObjectIds
//! as `ObjectId`, regular expressions as `RegExp`, documents as objects
//! and arrays as arrays.

mod convert;
mod fault;

use fault::{caught, failure};

use std::cell::RefCell;

use bson::{RawBson, RawBsonRef, RawDocument};
use rquickjs::function::This;
use rquickjs::{CatchResultExt, Context, Ctx, Function, Object, Runtime, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::query::interrupt;

/// The most heap one thread's engine may hold.
pub const MEMORY_LIMIT: usize = 64 << 20;

/// The shell types a script sees, defined once per engine.
const PRELUDE: &str = r#"
function ObjectId(hex) {
    if (!(this instanceof ObjectId)) return new ObjectId(hex);
    this.str = String(hex);
}
ObjectId.prototype.toString = function () { return 'ObjectId("' + this.str + '")'; };
ObjectId.prototype.toJSON = function () { return this.str; };
ObjectId.prototype.valueOf = function () { return this.str; };
ObjectId.prototype.equals = function (other) {
    return other instanceof ObjectId && other.str === this.str;
};
ObjectId.prototype.getTimestamp = function () {
    return new Date(parseInt(this.str.substr(0, 8), 16) * 1000);
};
var __ebb_compiled = {};
"#;

struct Engine {
    // Dropped after the context that lives in it.
    context: Context,
    _runtime: Runtime,
}

thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
}

fn engine() -> Result<Engine> {
    let fail = |e: rquickjs::Error| Error::new(ErrorKind::JsInterpreterFailure, e.to_string());
    let runtime = Runtime::new().map_err(fail)?;
    runtime.set_memory_limit(MEMORY_LIMIT);
    runtime.set_max_stack_size(1 << 20);
    runtime.set_interrupt_handler(Some(Box::new(|| {
        interrupt::check_current().is_err() || interrupt::deadline_passed()
    })));
    let context = Context::full(&runtime).map_err(fail)?;
    context
        .with(|ctx| ctx.eval::<(), _>(PRELUDE))
        .map_err(fail)?;
    Ok(Engine {
        context,
        _runtime: runtime,
    })
}

/// Runs `f` in this thread's engine (made on first use).
fn with_engine<T>(f: impl for<'js> FnOnce(Ctx<'js>) -> Result<T>) -> Result<T> {
    ENGINE.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(engine()?);
        }
        let engine = slot.as_ref().expect("made above");
        let out = engine.context.with(f);
        if out.is_err() {
            // Reclaim what a failed script left behind (and a heap at its
            // limit) before the next call.
            engine._runtime.run_gc();
        }
        out
    })
}

/// The function `source` defines: a function expression (`function (a)
/// {…}`), or, for `$where`, the body of one (`this.a > 1`, `return …`).
/// Compiled once per thread and source.
fn function<'js>(ctx: &Ctx<'js>, source: &str, body_allowed: bool) -> Result<Function<'js>> {
    let cache: Object = ctx
        .globals()
        .get("__ebb_compiled")
        .map_err(|e| failure(ctx, e))?;
    if let Ok(f) = cache.get::<_, Function>(source) {
        return Ok(f);
    }
    let trimmed = source.trim_start();
    let value: Value = if trimmed.starts_with("function") || !body_allowed {
        ctx.eval(format!("({source})")).catch(ctx).map_err(caught)?
    } else {
        // An expression (`this.a > 1`) is returned; statements (`var x =
        // …; return x`) are the body as written.
        match ctx.eval(format!("(function () {{ return ({source}); }})")) {
            Ok(v) => v,
            Err(_) => {
                let _ = ctx.catch();
                ctx.eval(format!("(function () {{ {source}\n}})"))
                    .catch(ctx)
                    .map_err(caught)?
            }
        }
    };
    let Some(f) = value.as_function().cloned() else {
        return Err(Error::new(
            ErrorKind::JsInterpreterFailure,
            "the script does not define a function",
        ));
    };
    cache.set(source, f.clone()).map_err(|e| failure(ctx, e))?;
    Ok(f)
}

/// `$where`: whether `source` (a function or a function's body), called
/// with `this` (and `obj`) bound to `doc`, returns a truthy value.
pub fn where_matches(source: &str, doc: &RawDocument) -> Result<bool> {
    with_engine(|ctx| {
        let f = function(&ctx, source, true)?;
        let this = convert::to_js(&ctx, RawBsonRef::Document(doc))?;
        ctx.globals()
            .set("obj", this.clone())
            .map_err(|e| failure(&ctx, e))?;
        let out: Value = f.call((This(this),)).catch(&ctx).map_err(caught)?;
        Ok(truthy(&out))
    })
}

/// `$function`: what the function `source` returns for `args`.
pub fn call(source: &str, args: &[RawBson]) -> Result<RawBson> {
    with_engine(|ctx| {
        let f = function(&ctx, source, false)?;
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            values.push(convert::to_js(&ctx, a.as_raw_bson_ref())?);
        }
        let mut call_args = rquickjs::function::Args::new(ctx.clone(), values.len());
        for v in values {
            call_args.push_arg(v).map_err(|e| failure(&ctx, e))?;
        }
        let out: Value = f.call_arg(call_args).catch(&ctx).map_err(caught)?;
        convert::from_js(&ctx, out)
    })
}

/// JavaScript's truthiness.
fn truthy(v: &Value<'_>) -> bool {
    if let Some(b) = v.as_bool() {
        return b;
    }
    if let Some(n) = v.as_number() {
        return n != 0.0 && !n.is_nan();
    }
    if let Some(s) = v.as_string() {
        return s.to_string().is_ok_and(|s| !s.is_empty());
    }
    !(v.is_null() || v.is_undefined())
}
