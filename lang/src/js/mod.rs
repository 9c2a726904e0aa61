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
use std::collections::HashMap;
use std::rc::Rc;

use bson::{RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use rquickjs::{CatchResultExt, Context, Ctx, Function, Persistent, Runtime, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::query::interrupt;

/// The most heap one thread's engine may hold.
pub const MEMORY_LIMIT: usize = 64 << 20;

/// The shell types a script sees, then the lockdown: the global object
/// and the built-in constructors and prototypes are frozen, so nothing one
/// script leaves behind (a global, a patched `Array.prototype`) reaches the
/// next, whoever sends it.
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
Object.getOwnPropertyNames(globalThis).forEach(function (name) {
    var v = globalThis[name];
    if ((typeof v === 'function' || typeof v === 'object') && v !== null && v !== globalThis) {
        Object.freeze(v);
        if (v.prototype) Object.freeze(v.prototype);
    }
});
Object.freeze(Object.getPrototypeOf(function () {}));
Object.freeze(globalThis);
"#;

/// How a source becomes a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Shape {
    /// A function expression (`$function`, `$accumulator`'s parts).
    Function,
    /// `$where`: a function, or an expression or statements over `this`;
    /// called as `f(obj)` with `this` bound to the document too.
    Where,
    /// `mapReduce`'s functions: `emit` and the command's `scope` variables
    /// are parameters of a function that returns the script's function;
    /// the source to compile is prefixed with the scope's names and a NUL.
    WithEmit,
}

struct Engine {
    // Dropped before the context and the runtime they live in.
    compiled: HashMap<(Shape, String), Persistent<Function<'static>>>,
    context: Context,
    runtime: Runtime,
}

thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
}

/// At most this many compiled scripts are kept per thread.
const COMPILED_KEPT: usize = 1024;

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
        compiled: HashMap::new(),
        context,
        runtime,
    })
}

/// Runs `f` in this thread's engine (made on first use), with the
/// function `source` compiled in `shape` (once per thread).
fn with_function<T>(
    shape: Shape,
    source: &str,
    f: impl for<'js> FnOnce(Ctx<'js>, Function<'js>) -> Result<T>,
) -> Result<T> {
    ENGINE.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(engine()?);
        }
        let engine = slot.as_mut().expect("made above");
        let key = (shape, source.to_owned());
        let cached = engine.compiled.get(&key).cloned();
        let (out, fresh) = engine.context.with(|ctx| {
            let (function, fresh) = match cached {
                Some(p) => (p.restore(&ctx).map_err(|e| failure(&ctx, e))?, None),
                None => {
                    let function = compile(&ctx, shape, source)?;
                    let saved = Persistent::save(&ctx, function.clone());
                    (function, Some(saved))
                }
            };
            Ok::<_, Error>((f(ctx, function), fresh))
        })?;
        if let Some(saved) = fresh {
            if engine.compiled.len() >= COMPILED_KEPT {
                engine.compiled.clear();
            }
            engine.compiled.insert(key, saved);
        }
        if out.is_err() {
            // Reclaim what a failed script left behind (and a heap at its
            // limit) before the next call.
            engine.runtime.run_gc();
        }
        out
    })
}

/// Compiles `source` into the function `shape` asks for.
fn compile<'js>(ctx: &Ctx<'js>, shape: Shape, source: &str) -> Result<Function<'js>> {
    let function_like = {
        let t = source.trim_start();
        t.starts_with("function") || t.starts_with('(')
    };
    let eval = |text: String| -> Result<Value<'js>> { ctx.eval(text).catch(ctx).map_err(caught) };
    let value = match shape {
        Shape::Function => eval(format!("({source}\n)"))?,
        Shape::Where if function_like => eval(format!(
            "(function (obj) {{ return ({source}\n).call(obj, obj); }})"
        ))?,
        // An expression (`this.a > 1`) is returned; statements (`var x =
        // …; return x`) are the body as written.
        Shape::Where => match ctx.eval::<Value, _>(format!(
            "(function (obj) {{ return (function () {{ return ({source}\n); }}).call(obj); }})"
        )) {
            Ok(v) => v,
            Err(_) => {
                let _ = ctx.catch();
                eval(format!(
                    "(function (obj) {{ return (function () {{ {source}\n}}).call(obj); }})"
                ))?
            }
        },
        Shape::WithEmit => {
            let (names, body) = source.split_once('\0').unwrap_or(("", source));
            let params = if names.is_empty() {
                "emit".to_owned()
            } else {
                format!("emit, {names}")
            };
            eval(format!("(function ({params}) {{ return ({body}\n); }})"))?
        }
    };
    value.as_function().cloned().ok_or_else(|| {
        Error::new(
            ErrorKind::JsInterpreterFailure,
            "the script does not define a function",
        )
    })
}

/// mongod's refusal of a script where server-side JavaScript is disabled
/// (`what`: `$function`, `$accumulator`).
pub fn disabled(what: &str) -> Error {
    Error::new(
        ErrorKind::JavaScriptDisabled,
        format!("{what} is not allowed: server-side JavaScript is disabled"),
    )
}

/// `$where`: whether `source` (a function, or a function's body), called
/// with `this` and `obj` bound to `doc`, returns a truthy value.
pub fn where_matches(source: &str, doc: &RawDocument) -> Result<bool> {
    with_function(Shape::Where, source, |ctx, f| {
        let this = convert::to_js(&ctx, RawBsonRef::Document(doc))?;
        let out: Value = f.call((this,)).catch(&ctx).map_err(caught)?;
        Ok(truthy(&out))
    })
}

/// `$function`: what the function `source` returns for `args`.
pub fn call(source: &str, args: &[RawBson]) -> Result<RawBson> {
    with_function(Shape::Function, source, |ctx, f| {
        let out = call_with(&ctx, &f, args)?;
        convert::from_js(&ctx, out)
    })
}

fn call_with<'js>(ctx: &Ctx<'js>, f: &Function<'js>, args: &[RawBson]) -> Result<Value<'js>> {
    let mut call_args = rquickjs::function::Args::new(ctx.clone(), args.len());
    for a in args {
        let v = convert::to_js(ctx, a.as_raw_bson_ref())?;
        call_args.push_arg(v).map_err(|e| failure(ctx, e))?;
    }
    f.call_arg(call_args).catch(ctx).map_err(caught)
}

/// `mapReduce`'s map phase: `map` called with `this` bound to each of
/// `docs`, the command's `scope` variables in reach; every `emit(key,
/// value)` it makes, in order.
pub fn map_all(
    map: &str,
    scope: &RawDocument,
    docs: &[RawDocumentBuf],
) -> Result<Vec<(RawBson, RawBson)>> {
    let (names, values) = scope_parameters(scope)?;
    let source = format!("{names}\0{map}");
    with_function(Shape::WithEmit, &source, |ctx, make| {
        let emitted: Rc<RefCell<Vec<(RawBson, RawBson)>>> = Rc::default();
        let sink = emitted.clone();
        let emit = Function::new(
            ctx.clone(),
            move |args: rquickjs::function::Rest<Value<'_>>| {
                let mut args = args.0.into_iter();
                let Some(key) = args.next() else {
                    return Ok(());
                };
                let ctx = key.ctx().clone();
                let unknown = |_| rquickjs::Error::Unknown;
                let key = convert::from_js(&ctx, key).map_err(unknown)?;
                let value = match args.next() {
                    Some(v) => convert::from_js(&ctx, v).map_err(unknown)?,
                    None => RawBson::Null,
                };
                sink.borrow_mut().push((key, value));
                Ok::<_, rquickjs::Error>(())
            },
        )
        .map_err(|e| failure(&ctx, e))?;
        let mut make_args = rquickjs::function::Args::new(ctx.clone(), values.len() + 1);
        make_args.push_arg(emit).map_err(|e| failure(&ctx, e))?;
        for v in &values {
            let v = convert::to_js(&ctx, v.as_raw_bson_ref())?;
            make_args.push_arg(v).map_err(|e| failure(&ctx, e))?;
        }
        let f: Function = make.call_arg(make_args).catch(&ctx).map_err(caught)?;
        for doc in docs {
            let this = convert::to_js(&ctx, RawBsonRef::Document(doc))?;
            let _: Value = f
                .call((rquickjs::function::This(this),))
                .catch(&ctx)
                .map_err(caught)?;
        }
        Ok(std::mem::take(&mut *emitted.borrow_mut()))
    })
}

/// `mapReduce`'s reduce (or finalize) phase: `f(key, values)` for each
/// key, `scope` in reach.
pub fn reduce_all(
    f: &str,
    scope: &RawDocument,
    groups: Vec<(RawBson, RawBson)>,
) -> Result<Vec<(RawBson, RawBson)>> {
    let (names, values) = scope_parameters(scope)?;
    let source = format!("{names}\0{f}");
    with_function(Shape::WithEmit, &source, |ctx, make| {
        let mut make_args = rquickjs::function::Args::new(ctx.clone(), values.len() + 1);
        make_args
            .push_arg(Value::new_undefined(ctx.clone()))
            .map_err(|e| failure(&ctx, e))?;
        for v in &values {
            let v = convert::to_js(&ctx, v.as_raw_bson_ref())?;
            make_args.push_arg(v).map_err(|e| failure(&ctx, e))?;
        }
        let f: Function = make.call_arg(make_args).catch(&ctx).map_err(caught)?;
        let mut out = Vec::with_capacity(groups.len());
        for (key, values) in groups {
            let v = call_with(&ctx, &f, &[key.clone(), values])?;
            out.push((key, convert::from_js(&ctx, v)?));
        }
        Ok(out)
    })
}

/// The names of a `scope` document's variables (comma-separated) and their
/// values; a name that is no JavaScript identifier is refused.
fn scope_parameters(scope: &RawDocument) -> Result<(String, Vec<RawBson>)> {
    let mut names = Vec::new();
    let mut values = Vec::new();
    for item in scope.iter() {
        let (k, v) = item.map_err(|e| Error::corrupt(e.to_string()))?;
        let k = k.as_str();
        let identifier = k
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
            && k.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
        if !identifier || k == "emit" {
            return Err(Error::bad_value(format!(
                "scope variable '{k}' is not a JavaScript identifier"
            )));
        }
        names.push(k.to_owned());
        values.push(RawBson::from(v));
    }
    Ok((names.join(", "), values))
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
