//! Hand-built classes for the shapes javac never emits: subroutines, class files
//! without stack maps, CLDC stack maps, ids that need the constant pool.

use jscope_bytecode::frames::{decode_stack_map, VType};
use jscope_bytecode::insn::{self, op, Kind};
use jscope_bytecode::{
    instrument, Attribute, ClassFile, CodeAttribute, Constant, ConstantPool, Member, Outcome,
    Probes, Reason,
};

const ACC_PUBLIC_STATIC: u16 = 0x0009;

struct MethodSpec {
    name: &'static str,
    desc: &'static str,
    access: u16,
    code: Option<Vec<u8>>,
    extra: Vec<(&'static str, Vec<u8>)>,
}

fn method(name: &'static str, desc: &'static str, code: &[u8]) -> MethodSpec {
    MethodSpec {
        name,
        desc,
        access: ACC_PUBLIC_STATIC,
        code: Some(code.to_vec()),
        extra: vec![],
    }
}

/// A class `T` extending Object with the given methods (max_stack 4, max_locals 4).
fn class(major: u16, methods: Vec<MethodSpec>) -> Vec<u8> {
    let mut pool = ConstantPool::new();
    let this_class = pool.add_class("T").unwrap();
    let super_class = pool.add_class("java/lang/Object").unwrap();
    let code_name = pool.add_utf8("Code").unwrap();
    let members = methods
        .into_iter()
        .map(|m| {
            let attributes = m.code.map(|code| {
                let attrs = m
                    .extra
                    .iter()
                    .map(|(n, info)| Attribute {
                        name_index: pool.add_utf8(n).unwrap(),
                        info: info.clone(),
                    })
                    .collect();
                let body = CodeAttribute {
                    max_stack: 4,
                    max_locals: 4,
                    code,
                    exceptions: vec![],
                    attributes: attrs,
                };
                Attribute {
                    name_index: code_name,
                    info: body.to_bytes().unwrap(),
                }
            });
            Member {
                access: m.access,
                name_index: pool.add_utf8(m.name).unwrap(),
                descriptor_index: pool.add_utf8(m.desc).unwrap(),
                attributes: attributes.into_iter().collect(),
            }
        })
        .collect();
    let class = ClassFile {
        minor: 0,
        major,
        pool,
        access: 0x0021,
        this_class,
        super_class,
        interfaces: vec![],
        fields: vec![],
        methods: members,
        attributes: vec![],
    };
    class.to_bytes().unwrap()
}

fn outcomes(bytes: &[u8], id: u32) -> (Option<Vec<u8>>, Vec<Outcome>) {
    let result = instrument(bytes, |_, _, _| Some(id), &Probes::default()).unwrap();
    (
        result.bytes,
        result.methods.into_iter().map(|m| m.outcome).collect(),
    )
}

fn code_of(bytes: &[u8], index: usize) -> (ClassFile, CodeAttribute) {
    let class = ClassFile::parse(bytes).unwrap();
    let attr = class
        .find_attribute(&class.methods[index].attributes, "Code")
        .unwrap();
    let code = CodeAttribute::parse(&attr.info).unwrap();
    (class, code)
}

#[test]
fn subroutines_are_refused_and_leave_the_class_unchanged() {
    // jsr +4; return; (subroutine) astore_0; ret 0
    let bytes = class(
        49,
        vec![method(
            "f",
            "()V",
            &[op::JSR, 0, 4, op::RETURN, 0x4b, op::RET, 0],
        )],
    );
    let (out, result) = outcomes(&bytes, 1);
    assert_eq!(result, [Outcome::Skipped(Reason::Subroutines)]);
    assert_eq!(out, None);
}

#[test]
fn abstract_methods_have_no_code_and_unselected_ones_are_not_listed() {
    let abstract_method = MethodSpec {
        name: "a",
        desc: "()V",
        access: 0x0401,
        code: None,
        extra: vec![],
    };
    let bytes = class(61, vec![abstract_method, method("b", "()V", &[op::RETURN])]);
    let result = instrument(
        &bytes,
        |_, m, _| (m == "a").then_some(3),
        &Probes::default(),
    )
    .unwrap();
    assert_eq!(result.methods.len(), 1);
    assert_eq!(result.methods[0].outcome, Outcome::Skipped(Reason::NoCode));
    assert_eq!(result.bytes, None);
}

#[test]
fn old_class_files_get_probes_but_no_stack_map() {
    // iconst_0; ifeq +4; nop; return
    let bytes = class(
        49,
        vec![method("f", "()V", &[0x03, 0x99, 0, 4, 0x00, op::RETURN])],
    );
    let (out, result) = outcomes(&bytes, 2);
    assert_eq!(result, [Outcome::Instrumented(2)]);
    let (class, code) = code_of(&out.unwrap(), 0);
    assert!(class
        .find_attribute(&code.attributes, "StackMapTable")
        .is_none());
    // iconst_2; invokestatic enter | original (ifeq now reaches the exit probe) | exit
    // probe; return | iconst_2; invokestatic exitThrow; athrow
    let insns = insn::decode(&code.code).unwrap();
    let opcodes: Vec<u8> = insns.iter().map(|i| i.opcode).collect();
    assert_eq!(
        opcodes,
        [
            0x05,
            op::INVOKESTATIC,
            0x03,
            0x99,
            0x00,
            0x05,
            op::INVOKESTATIC,
            op::RETURN,
            0x05,
            op::INVOKESTATIC,
            op::ATHROW
        ]
    );
    assert_eq!(
        insns[3].kind,
        Kind::Branch {
            opcode: 0x99,
            target: 9
        }
    );
    let catch_all = code.exceptions.last().unwrap();
    assert_eq!(
        (
            catch_all.start,
            catch_all.end,
            catch_all.handler,
            catch_all.catch_type
        ),
        (4, 14, 14, 0)
    );
    assert_eq!(code.max_stack, 5);
}

#[test]
fn new_class_files_get_a_stack_map_with_the_handler_frame() {
    let bytes = class(61, vec![method("f", "(JI)V", &[op::RETURN])]);
    let (out, _) = outcomes(&bytes, 7);
    let (class, code) = code_of(&out.unwrap(), 0);
    let smt = class
        .find_attribute(&code.attributes, "StackMapTable")
        .unwrap();
    let initial = vec![VType::Long, VType::Int];
    let frames = decode_stack_map(&smt.info, &class.pool, &initial).unwrap();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].offset, u32::from(code.exceptions[0].handler));
    assert_eq!(frames[0].locals, vec![]);
    assert_eq!(
        frames[0].stack,
        vec![VType::Object("java/lang/Throwable".into())]
    );
}

#[test]
fn ids_beyond_sipush_are_loaded_from_the_constant_pool() {
    // Ids travel as the int with the same bits (3e9 arrives as a negative int).
    for id in [40_000u32, 100_000, 3_000_000_000] {
        let bytes = class(61, vec![method("f", "()V", &[op::RETURN])]);
        let (out, result) = outcomes(&bytes, id);
        assert_eq!(result, [Outcome::Instrumented(id)]);
        let (class, code) = code_of(&out.unwrap(), 0);
        assert_eq!(code.code[0], op::LDC);
        let constant = class.pool.get(u16::from(code.code[1])).unwrap();
        assert_eq!(*constant, Constant::Integer(id as i32));
    }
}

#[test]
fn cldc_stack_maps_are_refused() {
    let mut m = method("f", "()V", &[op::RETURN]);
    m.extra.push(("StackMap", vec![0, 0]));
    let (_, result) = outcomes(&class(61, vec![m]), 1);
    let expected = Reason::UnrelocatableAttribute("StackMap".into());
    assert_eq!(result, [Outcome::Skipped(expected)]);
}

#[test]
fn malformed_type_annotations_in_code_are_refused() {
    let mut m = method("f", "()V", &[op::RETURN]);
    m.extra
        .push(("RuntimeVisibleTypeAnnotations", vec![0, 1, 0x10, 0, 0]));
    let (_, result) = outcomes(&class(61, vec![m]), 1);
    assert_eq!(result, [Outcome::Skipped(Reason::MalformedCode)]);
}

#[test]
fn old_constructors_with_branches_before_super_are_refused() {
    // aload_0; iconst_0; ifeq; nop; return: without frames the walk cannot follow a
    // branch before super(), so it refuses rather than guess where `this` is ready.
    let ctor = MethodSpec {
        name: "<init>",
        desc: "()V",
        access: 0x0001,
        code: Some(vec![0x2a, 0x03, 0x99, 0, 3, 0x00, op::RETURN]),
        extra: vec![],
    };
    let bytes = class(49, vec![ctor]);
    let (_, result) = outcomes(&bytes, 1);
    assert_eq!(result, [Outcome::Skipped(Reason::ConstructorShape)]);
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    let bytes = class(61, vec![method("f", "()V", &[op::RETURN])]);
    for cut in [0, 4, 9, bytes.len() / 2, bytes.len() - 1] {
        assert!(instrument(&bytes[..cut], |_, _, _| Some(1), &Probes::default()).is_err());
    }
    let mut newer = bytes.clone();
    newer[7] = 70;
    assert!(
        ClassFile::parse(&newer).is_err(),
        "JDK 26 class files are not read"
    );
}

#[test]
fn the_probe_class_is_never_instrumented() {
    let bytes = class(61, vec![method("enter", "(I)V", &[op::RETURN])]);
    let probes = Probes {
        class: "T".into(),
        ..Probes::default()
    };
    let result = instrument(&bytes, |_, _, _| Some(1), &probes).unwrap();
    assert_eq!(
        result.methods[0].outcome,
        Outcome::Skipped(Reason::ProbeClass)
    );
    assert_eq!(result.bytes, None);
}

#[test]
fn probe_references_are_shared_by_all_methods_of_a_class() {
    let bytes = class(
        61,
        vec![
            method("f", "()V", &[op::RETURN]),
            method("g", "()V", &[op::RETURN]),
        ],
    );
    let before = ClassFile::parse(&bytes).unwrap().pool.len();
    let result = instrument(
        &bytes,
        |_, m, _| Some(if m == "f" { 1 } else { 2 }),
        &Probes::default(),
    )
    .unwrap();
    let after = ClassFile::parse(&result.bytes.unwrap()).unwrap();
    // Class + its name, three names, one descriptor, three NameAndTypes, three
    // Methodrefs, and the StackMapTable attribute name and Throwable class + name.
    assert_eq!(after.pool.len() - before, 2 + 3 + 1 + 3 + 3 + 1 + 2);
}

#[test]
fn prepend_this_call_hands_this_to_a_static_method_before_the_first_instruction() {
    let instance = |name, code: &[u8]| MethodSpec {
        access: 0x0001,
        ..method(name, "()V", code)
    };
    let bytes = class(
        49,
        vec![
            // A loop back to offset 0 must not run the inserted call again.
            instance("start", &[op::GOTO, 0, 0]),
            method("start", "(I)V", &[op::RETURN]), // static: left alone
            instance("run", &[op::RETURN]),         // not selected
        ],
    );
    let call = ("jscope/Trace", "started", "(Ljava/lang/Thread;)V");
    let out = jscope_bytecode::prepend_this_call(&bytes, |m, _| m == "start", call)
        .unwrap()
        .expect("start changed");
    let (class, code) = code_of(&out, 0);
    let [hi, lo] = [code.code[2], code.code[3]];
    assert_eq!(code.code, [0x2a, op::INVOKESTATIC, hi, lo, op::GOTO, 0, 0]);
    let target = class.pool.member_ref(u16::from_be_bytes([hi, lo])).unwrap();
    assert_eq!(
        target,
        (call.0.to_string(), call.1.to_string(), call.2.to_string())
    );
    assert_eq!(code_of(&out, 1).1.code, [op::RETURN]);
    assert_eq!(code_of(&out, 2).1.code, [op::RETURN]);
    let none = jscope_bytecode::prepend_this_call(&bytes, |m, _| m == "absent", call).unwrap();
    assert_eq!(none, None);
}
