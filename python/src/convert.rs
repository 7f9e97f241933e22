//! Conversions between Python objects and JSON values.
//!
//! Python → JSON follows `JSON.stringify` where the two languages differ:
//! a float that is not finite becomes `null`, an integer outside the 64-bit
//! range becomes a double. Only `None`, `bool`, `int`, `float`, `str`,
//! `dict` with `str` keys, `list` and `tuple` are JSON; anything else is a
//! `TypeError`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::iter::{BoundDictIterator, BoundListIterator, BoundTupleIterator};
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Nesting deeper than this is rejected (it also stops reference cycles).
const MAX_DEPTH: usize = 512;

/// A container being converted: what is built so far and what is left.
enum Open<'py> {
    List(Vec<Value>, BoundListIterator<'py>),
    Tuple(Vec<Value>, BoundTupleIterator<'py>),
    Dict(Map<String, Value>, BoundDictIterator<'py>, Option<String>),
}

/// One object: a finished value, or a container whose items come next.
enum Step<'py> {
    Done(Value),
    Open(Open<'py>),
}

/// Converts a Python object into a JSON value. `what` names the argument in
/// error messages.
///
/// Iterative, not recursive: conversions run on the library's worker threads
/// (2 MiB stacks), where 512 recursive frames of a debug build overflowed.
pub fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    let mut stack = match step(obj, what)? {
        Step::Done(v) => return Ok(v),
        Step::Open(open) => vec![open],
    };
    loop {
        let top = stack.last_mut().expect("the stack is never empty here");
        let child = match top {
            Open::List(_, items) => items.next(),
            Open::Tuple(_, items) => items.next(),
            Open::Dict(_, items, pending) => match items.next() {
                Some((k, v)) => {
                    let key = k.cast::<PyString>().map_err(|_| {
                        PyTypeError::new_err(format!(
                            "{what} has a dict key of type {}; JSON object keys must be str",
                            type_name(&k)
                        ))
                    })?;
                    *pending = Some(key.to_cow()?.into_owned());
                    Some(v)
                }
                None => None,
            },
        };
        let value = match child {
            Some(child) => {
                if stack.len() > MAX_DEPTH {
                    return Err(PyValueError::new_err(format!(
                        "{what} is nested more than {MAX_DEPTH} levels deep (or is cyclic)"
                    )));
                }
                match step(&child, what)? {
                    Step::Done(v) => v,
                    Step::Open(open) => {
                        stack.push(open);
                        continue;
                    }
                }
            }
            None => match stack.pop().expect("the stack is never empty here") {
                Open::List(out, _) | Open::Tuple(out, _) => Value::Array(out),
                Open::Dict(out, _, _) => Value::Object(out),
            },
        };
        match stack.last_mut() {
            None => return Ok(value),
            Some(Open::List(out, _) | Open::Tuple(out, _)) => out.push(value),
            Some(Open::Dict(out, _, pending)) => {
                out.insert(pending.take().expect("a dict value follows its key"), value);
            }
        }
    }
}

fn step<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Step<'py>> {
    if obj.is_none() {
        return Ok(Step::Done(Value::Null));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Step::Done(Value::Bool(b.is_true())));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Step::Done(Value::String(s.to_cow()?.into_owned())));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Step::Done(Value::from(i)));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Step::Done(Value::from(u)));
        }
        // Beyond 64 bits: a double, as JSON.parse would read it (or null
        // when even that overflows).
        let n = obj.extract::<f64>().ok().and_then(Number::from_f64);
        return Ok(Step::Done(n.map_or(Value::Null, Value::Number)));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Step::Done(Number::from_f64(f.value()).map_or(Value::Null, Value::Number)));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return Ok(Step::Open(Open::Dict(Map::with_capacity(d.len()), d.iter(), None)));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return Ok(Step::Open(Open::List(Vec::with_capacity(l.len()), l.iter())));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return Ok(Step::Open(Open::Tuple(Vec::with_capacity(t.len()), t.iter())));
    }
    Err(PyTypeError::new_err(format!("{what} contains a {}, which is not a JSON value", type_name(obj))))
}

/// The name of an object's type, for error messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".to_owned())
}

/// A Python container being filled from a JSON container.
enum Filling<'py, 'a> {
    List(Bound<'py, PyList>, std::slice::Iter<'a, Value>),
    Dict(Bound<'py, PyDict>, serde_json::map::Iter<'a>),
}

/// Converts a JSON value into plain Python data (dicts keep key order).
/// Iterative, like [`to_json`]: it may run on a worker thread.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    let (root, open) = to_py_one(py, value)?;
    let mut stack: Vec<Filling<'py, '_>> = open.into_iter().collect();
    while let Some(top) = stack.last_mut() {
        let (key, child) = match top {
            Filling::List(_, items) => match items.next() {
                Some(v) => (None, v),
                None => {
                    stack.pop();
                    continue;
                }
            },
            Filling::Dict(_, items) => match items.next() {
                Some((k, v)) => (Some(k), v),
                None => {
                    stack.pop();
                    continue;
                }
            },
        };
        let (obj, open) = to_py_one(py, child)?;
        match (stack.last(), key) {
            (Some(Filling::List(list, _)), _) => list.append(obj)?,
            (Some(Filling::Dict(dict, _)), Some(k)) => dict.set_item(PyString::new(py, k), obj)?,
            _ => unreachable!("a dict item has a key, a list item none"),
        }
        stack.extend(open);
    }
    Ok(root)
}

/// One value: its Python object and, for a container (still empty), what
/// fills it.
fn to_py_one<'py, 'a>(py: Python<'py>, value: &'a Value) -> PyResult<(Bound<'py, PyAny>, Option<Filling<'py, 'a>>)> {
    Ok(match value {
        Value::Null => (py.None().into_bound(py), None),
        Value::Bool(b) => (PyBool::new(py, *b).to_owned().into_any(), None),
        Value::Number(n) => {
            let obj = if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            };
            (obj, None)
        }
        Value::String(s) => (PyString::new(py, s).into_any(), None),
        Value::Array(items) => {
            let list = PyList::empty(py);
            (list.clone().into_any(), Some(Filling::List(list, items.iter())))
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            (dict.clone().into_any(), Some(Filling::Dict(dict, map.iter())))
        }
    })
}

/// Reads a `str` argument, with a clear `TypeError` otherwise.
pub fn string_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(PyTypeError::new_err(format!("{what} must be a str, not {}", type_name(obj)))),
    }
}

/// Reads a list or tuple argument as JSON values.
pub fn sequence_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<Value>> {
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        match to_json(obj, what)? {
            Value::Array(items) => Ok(items),
            _ => unreachable!("a list converts to an array"),
        }
    } else {
        Err(PyTypeError::new_err(format!("{what} must be a list, not {}", type_name(obj))))
    }
}
