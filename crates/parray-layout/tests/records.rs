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

/// A record's field may be a record declared before it (its companion carries it first):
/// laid out as C lays out the nested structs, used by the types of the outer record, and
/// refused where a record array is kept one array per field.
#[test]
fn a_record_inside_a_record() {
    let text = "record V { float x; float y; }\n record B { double w; V pos; float m; int id; }\n dmem B [4] A;";
    let elem = elem_of(text, "A");
    let ElemType::Record(b) = elem else {
        panic!("{elem:?}")
    };
    assert_eq!((elem.size_bytes(), elem.align_bytes()), (24, 8));
    assert_eq!(
        (b.field_offset(1), b.field_offset(2), b.gap_after()),
        (8, 16, None)
    );
    assert!(
        matches!(b.def().fields[1].elem, ElemType::Record(v) if v.name() == "V" && v.size_bytes() == 8)
    );
    assert_eq!(
        b.declaration(),
        "record B { double w; V pos; float m; int id; }"
    );
    let program = parse_program(text).expect("parses");
    assert_eq!(program.closure("A"), vec!["A", "B", "V"]);
    // Declared after, or not at all: no record it knows.
    let e = parse_program("record B { V pos; }\n record V { float x; }").expect_err("V after B");
    assert!(
        e.message
            .contains("or a record declared before it (not `V`)"),
        "{e}"
    );
    let soa = format!("{text}\n dmem soa B [4] S;");
    let e = Module::build(&parse_program(&soa).expect("parses"), &[]).expect_err("soa");
    assert!(
        e.message
            .contains("an SoA array of a record inside a record is not implemented"),
        "{e}"
    );
}

/// The particle of `examples/particles.rs`: 24 bytes, four fields.
const PARTICLE: &str = "record Particle { float2 pos; float2 vel; float mass; float charge; }\n";

fn soa_record(text: &str, name: &str) -> (parray_layout::Record, bool, u64) {
    let module = Module::build(&parse_program(text).expect("parses"), &[]).expect("builds");
    let def = module.type_def(name).expect("declared");
    match def.class {
        TypeClass::Data {
            elem: ElemType::Record(r),
            soa,
            ..
        } => (r, soa, module.extent(def.root)),
        ref other => panic!("{other:?}"),
    }
}

#[test]
fn an_soa_array_keeps_each_field_in_an_array_at_a_multiple_of_256_bytes() {
    let text = format!("{PARTICLE} dmem soa Particle [100] Q; dmem Particle [100] P;");
    let (r, soa, extent) = soa_record(&text, "Q");
    assert!(soa && extent == 100);
    assert!(!soa_record(&text, "P").1);
    // pos: 800 bytes from 0; vel from 1024 (800 rounded up); mass from 2048 (1824 up);
    // charge from 2560 (2448 up), to 2960.
    let starts: Vec<u64> = (0..4).map(|k| r.soa_start(k, extent, 256)).collect();
    assert_eq!(starts, [0, 1024, 2048, 2560]);
    assert_eq!(r.soa_bytes(extent, 256), 2960);
    // The fields' offsets in a whole record, as C lays the struct out.
    let offsets: Vec<u64> = (0..4).map(|k| r.field_offset(k)).collect();
    assert_eq!(offsets, [0, 8, 16, 20]);
    // In shared memory the arrays are 16-byte aligned.
    assert_eq!(parray_layout::MemKind::Smem.soa_align(), 16);
    assert_eq!(r.soa_start(3, 3, 16), 80);
    // Element offsets are the AoS type's: a transposed SoA type reaches the same offsets.
    let text =
        format!("{PARTICLE} paged soa Particle [4][3] Q; paged soa Particle [#Q_1][#Q_0] T;");
    let module = Module::build(&parse_program(&text).unwrap(), &[]).unwrap();
    let t = module.type_def("T").unwrap();
    assert!(matches!(t.class, TypeClass::Data { soa: true, .. }));
    assert_eq!(module.extent(t.root), 12);
}

#[test]
fn soa_is_refused_where_it_means_nothing_at_the_word() {
    for (text, at, want) in [
        ("dmem soa float [4] A;", "soa", "`float` is not a record"),
        ("cmem soa Particle [4] A;", "soa", "not for cmem"),
        ("rmem soa Particle [4] A;", "soa", "not for rmem"),
        (
            "soa Particle [4] A;",
            "soa",
            "a view has no storage of its own",
        ),
        (
            "cuda(soa float* a) [1][32] T;",
            "soa",
            "`float` is not a record",
        ),
        (
            "cuda(soa Particle a) [1][32] T;",
            "soa",
            "write `soa Particle* name`",
        ),
    ] {
        let text = format!("{PARTICLE}{text}");
        let e = parse_program(&text).expect_err(&text);
        assert_eq!(e.kind, ErrorKind::Syntax, "{text}: {e}");
        assert_eq!(&text[e.span.start..e.span.end], at, "{text}: {e}");
        assert!(e.message.contains(want), "{text}: {e}");
    }
}

#[test]
fn an_soa_parameter_says_so() {
    let text = format!("{PARTICLE} cuda(soa Particle* q, Particle* p) [1][32] T;");
    let module = Module::build(&parse_program(&text).unwrap(), &[]).unwrap();
    let TypeClass::Thread(ThreadKind::Cuda(params)) = &module.type_def("T").unwrap().class else {
        panic!()
    };
    assert_eq!((params[0].soa, params[1].soa), (true, false));
    assert_eq!(params[0].to_string(), "soa Particle* q");
    let explained = parray_layout::explain::explain_types(
        &Module::build(
            &parse_program(&format!("{PARTICLE} pinned soa Particle [100] Q;")).unwrap(),
            &[],
        )
        .unwrap(),
    );
    assert!(
        explained.contains("pinned soa Particle (page-locked host memory, one array per field)"),
        "{explained}"
    );
    assert!(explained.contains("in 2960 bytes"), "{explained}");
    assert!(
        explained.contains("  mass    float   start 2048, bytes 4"),
        "{explained}"
    );
}

#[test]
fn a_copy_between_whole_records_and_field_arrays_goes_field_by_field() {
    use parray_layout::copy::{plan, CopyPath, Place};
    let text = format!(
        "{PARTICLE} dmem Particle [64][16] P; dmem soa Particle [64][16] Q; \
         dmem soa Particle [#Q_1][#Q_0] QT; dmem Particle [64][16] P2;"
    );
    let m = Module::build(&parse_program(&text).unwrap(), &[]).unwrap();
    let path = |s: &str, d: &str, at: (Place, Place)| plan((&m, s, at.0), (&m, d, at.1)).unwrap();
    let (host, gpu0, gpu1) = (Place::Host, Place::Gpu(0), Place::Gpu(1));
    for at in [(host, host), (gpu0, gpu0), (host, gpu0), (gpu0, host)] {
        assert_eq!(path("P", "Q", at), CopyPath::Fields);
        assert_eq!(path("Q", "P", at), CopyPath::Fields);
        assert_eq!(path("Q", "QT", at), CopyPath::ThroughHost);
    }
    assert_eq!(path("P", "Q", (gpu0, gpu1)), CopyPath::ThroughHost);
    // Between whole records the paths are as they were.
    assert_eq!(path("P", "P2", (gpu0, gpu0)), CopyPath::Bulk);
}

#[test]
fn a_distributed_record_array_is_not_soa() {
    let text = format!("{PARTICLE} mpi [4] M; dmem soa Particle [#M][16] Q;");
    let e = Module::build(&parse_program(&text).unwrap(), &[]).expect_err("distributed soa");
    assert!(e.message.contains("is not soa"), "{e}");
}
