//! Python bindings: the only module that knows about Python. Each class extracts its arguments,
//! calls one core function, and converts the result; every rule lives in the core.

mod agent;
mod args;
mod contract;
mod convert;
mod enter;
mod errors;
mod in_python;
mod launcher;
mod model;
mod observe;
mod openai;
mod profile;
mod runtime;
mod schema;
mod task;
mod tools;

use pyo3::prelude::*;
use pyo3::types::{PyFrozenSet, PyTuple};

/// A frozen Python class over a core value: the struct, one-line getters (`name: Type = |inner|
/// expression`, after their doc comments), `repr` from the core type's `Display`, and any
/// further methods, in one `#[pymethods]` block; the core value converts to it. `$py(shared T)`
/// is a class over a core object that only Python creates (no conversion), `$py(subclassed T)`
/// one that a Python class of the same name extends (the class users get: `outrider._entry`).
/// Flags before the getters add more from the core type: `value` gives `==`, `hash` and copies that are the object itself; `record` gives
/// `to_dict`, `from_dict` and pickling through them ([`crate::api::Record`]); `record_from`
/// the last two only; `views` gives `to_json`, pydantic support and the Jupyter views, and
/// `views_eq` those and `==`/`hash` over `to_dict()`, all with Python bodies ([`in_python`]).
macro_rules! frozen_class {
    ($(#[$doc:meta])* $py:ident($($core:tt)+) as $name:literal, views_eq, $($rest:tt)*) => {
        $crate::py::frozen_class! { $(#[$doc])* $py($($core)+) as $name, views, $($rest)*
            /// Equal when every field is (`to_dict()`, and a verdict's launch).
            fn __eq__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                $crate::py::in_python::call(slf.py(), ("outrider._interop", "eq"), (slf, other))
            }
            fn __ne__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
                let py = slf.py();
                let eq = $crate::py::in_python::call(py, ("outrider._interop", "eq"), (slf, other))?;
                if eq.is(&py.NotImplemented()) {
                    return Ok(eq.unbind());
                }
                Ok(pyo3::types::PyBool::new(py, !eq.is_truthy()?).to_owned().into_any().unbind())
            }
            fn __hash__(slf: &Bound<'_, Self>) -> PyResult<isize> {
                let body = ("outrider._interop", "hash_of");
                $crate::py::in_python::call(slf.py(), body, (slf,))?.extract()
            }
        }
    };
    ($(#[$doc:meta])* $py:ident($($core:tt)+) as $name:literal, views, $($rest:tt)*) => {
        $crate::py::frozen_class! { $(#[$doc])* $py($($core)+) as $name, $($rest)*
            /// `to_dict()` as JSON text (non-ASCII kept; `indent` as for `json.dumps`).
            #[pyo3(signature = (*, indent = None))]
            fn to_json<'py>(slf: &Bound<'py, Self>, indent: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
                $crate::py::in_python::call(slf.py(), ("outrider._interop", "to_json"), (slf, indent))
            }
            /// pydantic support: an instance validates as is, a dict through `from_dict`;
            /// serialises as `to_dict()`.
            #[classmethod]
            fn __get_pydantic_core_schema__<'py>(
                cls: &Bound<'py, pyo3::types::PyType>,
                source: &Bound<'py, PyAny>,
                handler: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let body = ("outrider._interop", "pydantic_schema");
                $crate::py::in_python::call(cls.py(), body, (cls, source, handler))
            }
            /// Jupyter: an HTML view (escaped, theme-neutral colours, long parts folded).
            fn _repr_html_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
                $crate::py::in_python::call(slf.py(), ("outrider._views", "html"), (slf,))
            }
            /// Jupyter: the same as Markdown.
            fn _repr_markdown_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
                $crate::py::in_python::call(slf.py(), ("outrider._views", "markdown"), (slf,))
            }
        }
    };
    ($(#[$doc:meta])* $py:ident($($core:tt)+) as $name:literal, value, $($rest:tt)*) => {
        $crate::py::frozen_class! { $(#[$doc])* $py($($core)+) as $name, $($rest)*
            fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
                other.cast::<$py>().is_ok_and(|o| o.get().inner == self.inner)
            }
            fn __hash__(&self) -> u64 {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                self.inner.hash(&mut h);
                h.finish()
            }
            fn __copy__(slf: Py<Self>) -> Py<Self> {
                slf
            }
            fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
                slf
            }
        }
    };
    ($(#[$doc:meta])* $py:ident($core:ty) as $name:literal, record, $($rest:tt)*) => {
        $crate::py::frozen_class! { $(#[$doc])* $py($core) as $name, record_from, $($rest)*
            /// The value as plain data (dicts, lists, str, numbers, None).
            fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                $crate::py::convert::dump(py, &self.inner)
            }
        }
    };
    ($(#[$doc:meta])* $py:ident($core:ty) as $name:literal, record_from, $($rest:tt)*) => {
        $crate::py::frozen_class! { $(#[$doc])* $py($core) as $name, $($rest)*
            /// Rebuild from `to_dict()` output, validated.
            #[classmethod]
            fn from_dict(_cls: &Bound<'_, pyo3::types::PyType>, data: &Bound<'_, PyAny>) -> PyResult<Self> {
                use $crate::py::convert::{to_json, wrong_type};
                let what = concat!($name, ".from_dict data");
                let d = data.cast::<pyo3::types::PyDict>().map_err(|_| wrong_type(what, "a dict", data))?;
                let inner = <$core as $crate::api::Record>::from_record(&to_json(d, "data")?)?;
                Ok($py { inner })
            }
            fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
                let state = $crate::api::Record::state(&slf.get().inner);
                let state = $crate::py::convert::dump(slf.py(), &state)?;
                (slf.get_type().getattr("from_dict")?, (state,)).into_pyobject(slf.py())
            }
        }
    };
    ($(#[$doc:meta])* $py:ident(subclassed $core:ty) as $name:literal, $($rest:tt)*) => {
        $crate::py::frozen_class! { @class [subclass,] $(#[$doc])* $py($core) as $name, $($rest)* }
    };
    ($(#[$doc:meta])* $py:ident(shared $core:ty) as $name:literal, $($rest:tt)*) => {
        $crate::py::frozen_class! { @class [] $(#[$doc])* $py($core) as $name, $($rest)* }
    };
    ($(#[$doc:meta])* $py:ident($core:ty) as $name:literal, $($rest:tt)*) => {
        $crate::py::frozen_class! { @class [] $(#[$doc])* $py($core) as $name, $($rest)* }

        /// The core value goes to Python as this class.
        impl<'py> IntoPyObject<'py> for $core {
            type Target = $py;
            type Output = Bound<'py, $py>;
            type Error = PyErr;
            fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, $py>> {
                Bound::new(py, $py { inner: self })
            }
        }
    };
    (@class [$($flag:tt)*] $(#[$doc:meta])* $py:ident($core:ty) as $name:literal,
     getters { $($(#[$gdoc:meta])* $get:ident: $ty:ty = |$s:ident| $expr:expr),* $(,)? }
     $($methods:tt)*) => {
        $(#[$doc])*
        #[pyclass(frozen, $($flag)* module = "outrider._core", name = $name)]
        pub struct $py {
            pub inner: $core,
        }

        #[pymethods]
        impl $py {
            $($(#[$gdoc])* #[getter] fn $get(&self) -> $ty { let $s = &self.inner; $expr })*
            fn __repr__(&self) -> String {
                self.inner.to_string()
            }
            $($methods)*
        }
    };
}
pub(crate) use frozen_class;

/// The native core of outrider (`outrider._core`).
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", crate::api::VERSION)?;
    m.add_class::<profile::PyRuntimeProfile>()?;
    m.add_class::<contract::PyExploreResult>()?;
    m.add_class::<contract::PyVerificationResult>()?;
    m.add_function(wrap_pyfunction!(contract::check_evidence, m)?)?;
    m.add_function(wrap_pyfunction!(tools::run_tool, m)?)?;
    m.add_function(wrap_pyfunction!(tools::tool_schemas, m)?)?;
    m.add_class::<launcher::PySubagentRequest>()?;
    m.add_class::<launcher::PySubagentLaunchResult>()?;
    m.add_class::<launcher::PySubagentLauncher>()?;
    m.add_class::<openai::PyOpenAICompatible>()?;
    m.add_class::<task::PyTaskTool>()?;
    m.add_class::<model::PyOfflineScout>()?;
    m.add_class::<model::ModelInbox>()?;
    m.add_class::<agent::PyMainAgent>()?;
    m.add_class::<launcher::PyCompletionVerdict>()?;
    let profile = |inner| profile::PyRuntimeProfile { inner };
    m.add("EXPLORE_PROFILE", profile(crate::api::explore_profile()))?;
    m.add(
        "VERIFICATION_PROFILE",
        profile(crate::api::verification_profile()),
    )?;
    m.add(
        "READONLY_TOOLS",
        PyFrozenSet::new(m.py(), crate::api::READONLY_TOOLS)?,
    )?;
    // `__all__` is what was added above: the one list `outrider/__init__.py` and `_core.pyi` are
    // checked against (tests/test_package.py).
    let mut names: Vec<String> = m.dict().keys().extract()?;
    names.retain(|n| !n.starts_with('_') || n == "__version__");
    names.sort();
    m.add("__all__", names)?;
    observe::install(m.py())?;
    // Private helpers for outrider's Python modules: set as attributes, since `add` would list
    // them in `__all__`.
    m.setattr("_redact", wrap_pyfunction!(observe::_redact, m)?)?;
    m.setattr(
        "_register_secret",
        wrap_pyfunction!(observe::_register_secret, m)?,
    )?;
    // The trace vocabulary, named once in the core: `outrider.types` and `outrider.trace` are
    // checked against (or built from) these.
    let events = crate::api::EventKind::ALL.map(|e| e.as_str());
    m.setattr("_TRACE_EVENTS", PyTuple::new(m.py(), events)?)?;
    let reasons = crate::api::TerminalReason::ALL.map(|r| r.as_str());
    m.setattr("_TERMINAL_REASONS", PyTuple::new(m.py(), reasons)?)?;
    // Threads the core started must be out of Python before the interpreter finalizes.
    let at_exit = wrap_pyfunction!(enter::_at_exit, m)?;
    m.py()
        .import("atexit")?
        .call_method1("register", (at_exit,))?;
    Ok(())
}
