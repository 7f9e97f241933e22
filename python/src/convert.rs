//! Conversions between Python objects and JSON values.
//!
//! Python → JSON follows `JSON.stringify` where the two languages differ:
//! a float that is not finite becomes `null`, an integer outside the 64-bit
//! range becomes a double. Only `None`, `bool`, `int`, `float`, `str`,
//! `dict` with `str` keys, `list` and `tuple` are JSON; anything else is a
//! `TypeError`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Nesting deeper than this is rejected (it also stops reference cycles).
const MAX_DEPTH: usize = 512;

/// Converts a Python object into a JSON value. `what` names the argument in
/// error messages.
pub fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    convert(obj, what, 0)
}

fn convert(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "{what} is nested more than {MAX_DEPTH} levels deep (or is cyclic)"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        // Beyond 64 bits: a double, as JSON.parse would read it (or null
        // when even that overflows).
        return Ok(obj.extract::<f64>().ok().and_then(Number::from_f64).map_or(Value::Null, Value::Number));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Number::from_f64(f.value()).map_or(Value::Null, Value::Number));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{what} has a dict key of type {}; JSON object keys must be str",
                    type_name(&k)
                ))
            })?;
            map.insert(key.to_cow()?.into_owned(), convert(&v, what, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        let mut out = Vec::with_capacity(l.len());
        for item in l.iter() {
            out.push(convert(&item, what, depth + 1)?);
        }
        return Ok(Value::Array(out));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        let mut out = Vec::with_capacity(t.len());
        for item in t.iter() {
            out.push(convert(&item, what, depth + 1)?);
        }
        return Ok(Value::Array(out));
    }
    Err(PyTypeError::new_err(format!("{what} contains a {}, which is not a JSON value", type_name(obj))))
}

/// The name of an object's type, for error messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".to_owned())
}

/// Converts a JSON value into plain Python data (dicts keep key order).
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(PyString::new(py, k), to_py(py, v)?)?;
            }
            dict.into_any()
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
