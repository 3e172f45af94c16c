; Every call through a plain name: launch macros such as LAUNCH(k, grid, block, ...) are picked from these.
(call_expression function: (identifier)) @call
