; Every loop statement: the loop depth of a kernel body is counted from these, without recursion.
[(for_statement) (while_statement) (do_statement) (for_range_loop)] @loop
