// --list-passes prints every registered pass with the first line of its docstring.
// RUN: pypto-opt --list-passes | filecheck %s

// CHECK:      Available passes:
// CHECK:        canonicalize {{ *}}Fold constants
// CHECK:        cse {{ *}}Common subexpression elimination
