"""An entry point whose module cannot be imported."""

import envdoctor_missing_dependency  # noqa: F401
