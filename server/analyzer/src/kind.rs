//! Node kinds as numbers, for `match node.kind_key() { kind::CALL => ... }`: a jump table where
//! a `match` on `kind_name()` compares strings one arm after another (most of the largest
//! functions' code in the WebAssembly module). Each constant is the smallest kind id of the
//! grammar with that name ([`crate::syntax::NodeExt::kind_key`] maps every id to the smallest
//! one of its name), so a match on these is the same as a match on the names; the test
//! `kind_constants_are_the_grammars` checks every constant against the grammar.

pub const ALIASED_IMPORT: u16 = 117;
pub const ARGUMENT_LIST: u16 = 157;
pub const ASSERT_STATEMENT: u16 = 121;
pub const ASSIGNMENT: u16 = 198;
pub const AS_PATTERN: u16 = 165;
pub const ATTRIBUTE: u16 = 203;
pub const AUGMENTED_ASSIGNMENT: u16 = 199;
pub const BINARY_OPERATOR: u16 = 191;
pub const BLOCK: u16 = 135;
pub const BOOLEAN_OPERATOR: u16 = 190;
pub const BREAK_STATEMENT: u16 = 129;
pub const CALL: u16 = 206;
pub const CLASS_DEFINITION: u16 = 154;
pub const COMMENT: u16 = 99;
pub const COMPARISON_OPERATOR: u16 = 195;
pub const CONCATENATED_STRING: u16 = 230;
pub const CONDITIONAL_EXPRESSION: u16 = 229;
pub const CONTINUE_STATEMENT: u16 = 130;
pub const DECORATED_DEFINITION: u16 = 158;
pub const DECORATOR: u16 = 159;
pub const DEFAULT_PARAMETER: u16 = 181;
pub const DICTIONARY: u16 = 218;
pub const DICTIONARY_COMPREHENSION: u16 = 221;
pub const DICTIONARY_SPLAT: u16 = 149;
pub const DOTTED_NAME: u16 = 162;
pub const ELIF_CLAUSE: u16 = 132;
pub const ELLIPSIS: u16 = 88;
pub const ELSE_CLAUSE: u16 = 133;
pub const EXCEPT_CLAUSE: u16 = 140;
pub const EXPRESSION_LIST: u16 = 161;
pub const EXPRESSION_STATEMENT: u16 = 122;
pub const FALSE: u16 = 97;
pub const FINALLY_CLAUSE: u16 = 141;
pub const FLOAT: u16 = 94;
pub const FOR_IN_CLAUSE: u16 = 227;
pub const FOR_STATEMENT: u16 = 137;
pub const FUNCTION_DEFINITION: u16 = 145;
pub const FUTURE_IMPORT_STATEMENT: u16 = 114;
pub const GENERATOR_EXPRESSION: u16 = 223;
pub const GENERIC_TYPE: u16 = 210;
pub const IDENTIFIER: u16 = 1;
pub const IF_CLAUSE: u16 = 228;
pub const IF_STATEMENT: u16 = 131;
pub const IMPORT_FROM_STATEMENT: u16 = 115;
pub const IMPORT_STATEMENT: u16 = 111;
pub const INTEGER: u16 = 93;
pub const INTERPOLATION: u16 = 233;
pub const KEYWORD_ARGUMENT: u16 = 214;
pub const LAMBDA: u16 = 73;
pub const LIST: u16 = 215;
pub const LIST_COMPREHENSION: u16 = 220;
pub const LIST_PATTERN: u16 = 167;
pub const LIST_SPLAT: u16 = 148;
pub const LIST_SPLAT_PATTERN: u16 = 183;
pub const MODULE: u16 = 108;
pub const NONE: u16 = 98;
pub const NOT_OPERATOR: u16 = 189;
pub const PAIR: u16 = 219;
pub const PARENTHESIZED_EXPRESSION: u16 = 225;
pub const PASS_STATEMENT: u16 = 128;
pub const PATTERN_LIST: u16 = 200;
pub const RAISE_STATEMENT: u16 = 127;
pub const RETURN_STATEMENT: u16 = 125;
pub const SET: u16 = 216;
pub const SET_COMPREHENSION: u16 = 222;
pub const SLICE: u16 = 205;
pub const STRING: u16 = 231;
pub const STRING_CONTENT: u16 = 232;
pub const STRING_END: u16 = 107;
pub const STRING_START: u16 = 104;
pub const SUBSCRIPT: u16 = 204;
pub const TRUE: u16 = 96;
pub const TRY_STATEMENT: u16 = 139;
pub const TUPLE: u16 = 217;
pub const TUPLE_PATTERN: u16 = 168;
pub const TYPE: u16 = 43;
pub const TYPED_DEFAULT_PARAMETER: u16 = 182;
pub const TYPED_PARAMETER: u16 = 207;
pub const UNARY_OPERATOR: u16 = 192;
pub const WHILE_STATEMENT: u16 = 138;
pub const WITH_CLAUSE: u16 = 143;
pub const WITH_STATEMENT: u16 = 142;
pub const YIELD: u16 = 87;

/// Every constant with its grammar name.
#[cfg(test)]
pub(crate) const ALL: &[(u16, &str)] = &[
    (ALIASED_IMPORT, "aliased_import"),
    (ARGUMENT_LIST, "argument_list"),
    (ASSERT_STATEMENT, "assert_statement"),
    (ASSIGNMENT, "assignment"),
    (AS_PATTERN, "as_pattern"),
    (ATTRIBUTE, "attribute"),
    (AUGMENTED_ASSIGNMENT, "augmented_assignment"),
    (BINARY_OPERATOR, "binary_operator"),
    (BLOCK, "block"),
    (BOOLEAN_OPERATOR, "boolean_operator"),
    (BREAK_STATEMENT, "break_statement"),
    (CALL, "call"),
    (CLASS_DEFINITION, "class_definition"),
    (COMMENT, "comment"),
    (COMPARISON_OPERATOR, "comparison_operator"),
    (CONCATENATED_STRING, "concatenated_string"),
    (CONDITIONAL_EXPRESSION, "conditional_expression"),
    (CONTINUE_STATEMENT, "continue_statement"),
    (DECORATED_DEFINITION, "decorated_definition"),
    (DECORATOR, "decorator"),
    (DEFAULT_PARAMETER, "default_parameter"),
    (DICTIONARY, "dictionary"),
    (DICTIONARY_COMPREHENSION, "dictionary_comprehension"),
    (DICTIONARY_SPLAT, "dictionary_splat"),
    (DOTTED_NAME, "dotted_name"),
    (ELIF_CLAUSE, "elif_clause"),
    (ELLIPSIS, "ellipsis"),
    (ELSE_CLAUSE, "else_clause"),
    (EXCEPT_CLAUSE, "except_clause"),
    (EXPRESSION_LIST, "expression_list"),
    (EXPRESSION_STATEMENT, "expression_statement"),
    (FALSE, "false"),
    (FINALLY_CLAUSE, "finally_clause"),
    (FLOAT, "float"),
    (FOR_IN_CLAUSE, "for_in_clause"),
    (FOR_STATEMENT, "for_statement"),
    (FUNCTION_DEFINITION, "function_definition"),
    (FUTURE_IMPORT_STATEMENT, "future_import_statement"),
    (GENERATOR_EXPRESSION, "generator_expression"),
    (GENERIC_TYPE, "generic_type"),
    (IDENTIFIER, "identifier"),
    (IF_CLAUSE, "if_clause"),
    (IF_STATEMENT, "if_statement"),
    (IMPORT_FROM_STATEMENT, "import_from_statement"),
    (IMPORT_STATEMENT, "import_statement"),
    (INTEGER, "integer"),
    (INTERPOLATION, "interpolation"),
    (KEYWORD_ARGUMENT, "keyword_argument"),
    (LAMBDA, "lambda"),
    (LIST, "list"),
    (LIST_COMPREHENSION, "list_comprehension"),
    (LIST_PATTERN, "list_pattern"),
    (LIST_SPLAT, "list_splat"),
    (LIST_SPLAT_PATTERN, "list_splat_pattern"),
    (MODULE, "module"),
    (NONE, "none"),
    (NOT_OPERATOR, "not_operator"),
    (PAIR, "pair"),
    (PARENTHESIZED_EXPRESSION, "parenthesized_expression"),
    (PASS_STATEMENT, "pass_statement"),
    (PATTERN_LIST, "pattern_list"),
    (RAISE_STATEMENT, "raise_statement"),
    (RETURN_STATEMENT, "return_statement"),
    (SET, "set"),
    (SET_COMPREHENSION, "set_comprehension"),
    (SLICE, "slice"),
    (STRING, "string"),
    (STRING_CONTENT, "string_content"),
    (STRING_END, "string_end"),
    (STRING_START, "string_start"),
    (SUBSCRIPT, "subscript"),
    (TRUE, "true"),
    (TRY_STATEMENT, "try_statement"),
    (TUPLE, "tuple"),
    (TUPLE_PATTERN, "tuple_pattern"),
    (TYPE, "type"),
    (TYPED_DEFAULT_PARAMETER, "typed_default_parameter"),
    (TYPED_PARAMETER, "typed_parameter"),
    (UNARY_OPERATOR, "unary_operator"),
    (WHILE_STATEMENT, "while_statement"),
    (WITH_CLAUSE, "with_clause"),
    (WITH_STATEMENT, "with_statement"),
    (YIELD, "yield"),
];
