//! Record elements: `record P { ... }` items, the records data types and parameters name,
//! and their C layout.

use parray_layout::tree::TypeClass;
use parray_layout::{parse_program, ElemType, ErrorKind, Module, ThreadKind};

fn elem_of(text: &str, name: &str) -> ElemType {
    let program = parse_program(text).expect("parses");
    let module = Module::build(&program, &[]).expect("builds");
    match module.type_def(name).expect("declared").class {
        TypeClass::Data { elem, .. } => elem,
        TypeClass::Thread(_) => panic!("{name} is a thread array"),
    }
}

#[test]
fn a_record_is_laid_out_as_c_lays_out_its_struct() {
    let elem = elem_of(
        "record P { float2 pos; float mass; int id; }\n dmem P [4] A;",
        "A",
    );
    let ElemType::Record(r) = elem else {
        panic!("{elem:?}")
    };
    assert_eq!((elem.size_bytes(), elem.align_bytes()), (16, 8));
    assert_eq!((r.field_bytes(), r.gap_after()), (16, None));
    assert_eq!(
        r.field("mass").map(|(i, f)| (i, f.elem)),
        Some((1, ElemType::Float))
    );
    // A char before an int leaves three bytes of padding; the tail pads to the alignment.
    let padded = elem_of("record Q { char c; int i; char d; }\n Q [2] B;", "B");
    let ElemType::Record(q) = padded else {
        panic!("{padded:?}")
    };
    assert_eq!(
        (
            padded.size_bytes(),
            padded.align_bytes(),
            q.field_bytes(),
            q.gap_after()
        ),
        (12, 4, 6, Some(0))
    );
}

#[test]
fn a_record_may_be_declared_after_its_uses_and_names_parameters() {
    let program = parse_program("cuda(P* p, float dt) [4][32] T;\n record P { float x; float v; }")
        .expect("parses");
    let module = Module::build(&program, &[]).expect("builds");
    let TypeClass::Thread(ThreadKind::Cuda(params)) = &module.type_def("T").expect("T").class
    else {
        panic!()
    };
    assert!(
        matches!(params[0].elem, ElemType::Record(r) if !r.def().fields.is_empty() && r.name() == "P")
    );
    assert_eq!(program.closure("T"), vec!["T".to_string(), "P".to_string()]);
}

#[test]
fn an_unknown_record_is_an_error_at_its_name() {
    let text = "dmem Particle [4] A;";
    let program = parse_program(text).expect("parses: the record may come from elsewhere");
    let e = Module::build(&program, &[]).expect_err("no record P");
    assert_eq!(e.kind, ErrorKind::Unknown);
    assert_eq!(&text[e.span.start..e.span.end], "Particle");
    assert!(e.message.contains("#[derive(parray::Record)]"), "{e}");
    // A lower-case word is a misspelt element, not a record.
    let e = parse_program("dmem flaot [4] A;").expect_err("not an element");
    assert!(e.message.contains("unknown element type `flaot`"), "{e}");
}

#[test]
fn bad_records_are_errors() {
    for (text, want) in [
        ("record P { }", "has no fields"),
        ("record P { float x; int x; }", "duplicate field `x`"),
        ("record P { Q q; }", "a record's field is one of"),
    ] {
        let e = parse_program(text).expect_err(text);
        assert!(e.message.contains(want), "{text}: {e}");
    }
}
