//! The types a written chunk declares in its metadata event: the primitives, the
//! constant pool types (threads, classes, methods, stack traces, ...), the
//! annotations that give fields their units and labels, and every event type,
//! with the JDK's names and fields in the JDK's order so that the JDK's `jfr`
//! tool, JMC and async-profiler's converter read them as their own.

use super::out::Out;
use crate::build::USER_EVENT_PREFIX;

/// Type ids. Ids 0 and 1 are the metadata and checkpoint events; everything else
/// is this writer's choice (readers go by name).
pub(crate) mod id {
    pub const BOOLEAN: i64 = 4;
    pub const INT: i64 = 8;
    pub const SHORT: i64 = 12;
    pub const LONG: i64 = 9;
    pub const STRING: i64 = 10;

    pub const CLASS: i64 = 20;
    pub const CLASS_LOADER: i64 = 21;
    pub const THREAD: i64 = 22;
    pub const THREAD_GROUP: i64 = 23;
    pub const METHOD: i64 = 24;
    pub const SYMBOL: i64 = 25;
    pub const PACKAGE: i64 = 26;
    pub const STACK_TRACE: i64 = 27;
    pub const STACK_FRAME: i64 = 28;
    pub const FRAME_TYPE: i64 = 29;
    pub const THREAD_STATE: i64 = 30;
    pub const GC_NAME: i64 = 31;
    pub const GC_CAUSE: i64 = 32;

    pub const LABEL: i64 = 40;
    pub const DESCRIPTION: i64 = 41;
    pub const CATEGORY: i64 = 42;
    pub const CONTENT_TYPE: i64 = 43;
    pub const TIMESTAMP: i64 = 44;
    pub const TIMESPAN: i64 = 45;
    pub const UNSIGNED: i64 = 46;
    pub const DATA_AMOUNT: i64 = 47;
    pub const MEMORY_ADDRESS: i64 = 48;

    pub const EXECUTION_SAMPLE: i64 = 100;
    pub const WALL_CLOCK_SAMPLE: i64 = 101;
    pub const THREAD_SNAPSHOT: i64 = 102;
    pub const ALLOCATION_SAMPLE: i64 = 103;
    pub const MONITOR_ENTER: i64 = 104;
    pub const MONITOR_WAIT: i64 = 105;
    pub const THREAD_PARK: i64 = 106;
    pub const GARBAGE_COLLECTION: i64 = 107;
    pub const THREAD_START: i64 = 108;
    pub const THREAD_END: i64 = 109;
    pub const METHOD_TRACE: i64 = 110;
    pub const JVM_INFORMATION: i64 = 111;
    pub const OS_INFORMATION: i64 = 112;
    pub const CPU_INFORMATION: i64 = 113;
    pub const ACTIVE_SETTING: i64 = 114;
    pub const HEADER: i64 = 115;
    pub const THREAD_START_CALL: i64 = 116;
    pub const COUNTER: i64 = 117;
    pub const CLASS_LOAD: i64 = 118;
    pub const CLASS_UNLOAD: i64 = 119;
    pub const COMPILATION: i64 = 120;
    pub const OBJECT_FREE: i64 = 121;
    pub const COMPILED_UNLOAD: i64 = 122;
    /// The first user event type; each user event name gets the next id.
    pub const FIRST_USER_EVENT: i64 = 200;
}

/// An annotation on a type or a field, as the JDK's own metadata has them.
#[derive(Debug, Clone)]
enum Annotation {
    Label(String),
    Description(&'static str),
    Category(&'static [&'static str]),
    ContentType,
    Timestamp(&'static str),
    Timespan(&'static str),
    Unsigned,
    DataAmount,
    MemoryAddress,
}

#[derive(Debug, Clone)]
struct Field {
    name: &'static str,
    ty: i64,
    cpool: bool,
    array: bool,
    annotations: Vec<Annotation>,
}

/// One `class` element of the metadata.
#[derive(Debug, Clone)]
pub(crate) struct Type {
    id: i64,
    name: String,
    super_type: Option<&'static str>,
    simple: bool,
    annotations: Vec<Annotation>,
    fields: Vec<Field>,
}

impl Type {
    fn new(id: i64, name: &str) -> Type {
        Type {
            id,
            name: name.to_string(),
            super_type: None,
            simple: false,
            annotations: Vec::new(),
            fields: Vec::new(),
        }
    }

    /// A type whose values are their one field (symbols, frame types, states).
    fn simple(id: i64, name: &str, label: &str, field: &'static str) -> Type {
        let mut t = Type::new(id, name).label(label);
        t.simple = true;
        t.field(field, id::STRING, label)
    }

    fn annotation(id: i64, name: &str) -> Type {
        let mut t = Type::new(id, name);
        t.super_type = Some("java.lang.annotation.Annotation");
        t
    }

    fn event(id: i64, name: &str, label: &str, category: &'static [&'static str]) -> Type {
        let mut t = Type::new(id, name).label(label);
        t.super_type = Some("jdk.jfr.Event");
        t.annotations.push(Annotation::Category(category));
        t.field("startTime", id::LONG, "Start Time")
            .with(Annotation::Timestamp("TICKS"))
    }

    fn label(mut self, label: &str) -> Type {
        self.annotations.push(Annotation::Label(label.to_string()));
        self
    }

    fn field(mut self, name: &'static str, ty: i64, label: &str) -> Type {
        self.fields.push(Field {
            name,
            ty,
            cpool: false,
            array: false,
            annotations: vec![Annotation::Label(label.to_string())],
        });
        self
    }

    /// A field holding a key into the constant pool of its type.
    fn pooled(mut self, name: &'static str, ty: i64, label: &str) -> Type {
        self = self.field(name, ty, label);
        self.last().cpool = true;
        self
    }

    /// Adds an annotation to the last field, or to the type when it has none.
    fn with(mut self, a: Annotation) -> Type {
        match self.fields.last_mut() {
            Some(f) => f.annotations.push(a),
            None => self.annotations.push(a),
        }
        self
    }

    fn last(&mut self) -> &mut Field {
        self.fields.last_mut().expect("a field was just added")
    }

    fn duration(self) -> Type {
        self.field("duration", id::LONG, "Duration")
            .with(Annotation::Timespan("TICKS"))
    }

    fn event_thread(self) -> Type {
        self.pooled("eventThread", id::THREAD, "Event Thread")
    }

    fn stack_trace(self) -> Type {
        self.pooled("stackTrace", id::STACK_TRACE, "Stack Trace")
    }

    fn address(self, label: &str) -> Type {
        self.field("address", id::LONG, label)
            .with(Annotation::Unsigned)
            .with(Annotation::MemoryAddress)
    }
}

/// Every type a chunk declares: the fixed ones, then one per user event name.
pub(crate) fn all_types(user_events: &[String]) -> Vec<Type> {
    let mut types = primitive_types();
    types.extend(pool_types());
    types.extend(annotation_types());
    types.extend(event_types());
    for (i, name) in user_events.iter().enumerate() {
        types.push(user_event_type(id::FIRST_USER_EVENT + i as i64, name));
    }
    types
}

fn primitive_types() -> Vec<Type> {
    [
        (id::BOOLEAN, "boolean"),
        (5, "char"),
        (6, "float"),
        (7, "double"),
        (id::INT, "int"),
        (id::LONG, "long"),
        (id::STRING, "java.lang.String"),
        (11, "byte"),
        (id::SHORT, "short"),
    ]
    .into_iter()
    .map(|(i, n)| Type::new(i, n))
    .collect()
}

fn pool_types() -> Vec<Type> {
    vec![
        Type::new(id::CLASS, "java.lang.Class")
            .label("Java Class")
            .pooled("classLoader", id::CLASS_LOADER, "Class Loader")
            .pooled("name", id::SYMBOL, "Name")
            .pooled("package", id::PACKAGE, "Package")
            .field("modifiers", id::INT, "Access Modifiers")
            .field("hidden", id::BOOLEAN, "Hidden"),
        Type::new(id::CLASS_LOADER, "jdk.types.ClassLoader")
            .label("Java Class Loader")
            .pooled("type", id::CLASS, "Type")
            .pooled("name", id::SYMBOL, "Name"),
        Type::new(id::THREAD, "java.lang.Thread")
            .label("Thread")
            .field("osName", id::STRING, "OS Thread Name")
            .field("osThreadId", id::LONG, "OS Thread Id")
            .field("javaName", id::STRING, "Java Thread Name")
            .field("javaThreadId", id::LONG, "Java Thread Id")
            .pooled("group", id::THREAD_GROUP, "Java Thread Group")
            .field("virtual", id::BOOLEAN, "Virtual Thread"),
        Type::new(id::THREAD_GROUP, "jdk.types.ThreadGroup")
            .label("Thread Group")
            .pooled("parent", id::THREAD_GROUP, "Parent")
            .field("name", id::STRING, "Name"),
        // async-profiler's converter reads exactly these five fields of a method.
        Type::new(id::METHOD, "jdk.types.Method")
            .label("Java Method")
            .pooled("type", id::CLASS, "Type")
            .pooled("name", id::SYMBOL, "Name")
            .pooled("descriptor", id::SYMBOL, "Descriptor")
            .field("modifiers", id::INT, "Access Modifiers")
            .field("hidden", id::BOOLEAN, "Hidden"),
        Type::simple(id::SYMBOL, "jdk.types.Symbol", "Symbol", "string"),
        Type::new(id::PACKAGE, "jdk.types.Package")
            .label("Package")
            .pooled("name", id::SYMBOL, "Name")
            .field("exported", id::BOOLEAN, "Exported"),
        Type::new(id::STACK_TRACE, "jdk.types.StackTrace")
            .label("Stacktrace")
            .field("truncated", id::BOOLEAN, "Truncated")
            .field("frames", id::STACK_FRAME, "Stack Frames")
            .array(),
        Type::new(id::STACK_FRAME, "jdk.types.StackFrame")
            .pooled("method", id::METHOD, "Java Method")
            .field("lineNumber", id::INT, "Line Number")
            .field("bytecodeIndex", id::INT, "Bytecode Index")
            .pooled("type", id::FRAME_TYPE, "Frame Type"),
        Type::simple(
            id::FRAME_TYPE,
            "jdk.types.FrameType",
            "Frame type",
            "description",
        ),
        Type::simple(
            id::THREAD_STATE,
            "jdk.types.ThreadState",
            "Java Thread State",
            "name",
        ),
        Type::simple(id::GC_NAME, "jdk.types.GCName", "GC Name", "name"),
        Type::simple(id::GC_CAUSE, "jdk.types.GCCause", "GC Cause", "cause"),
    ]
}

impl Type {
    /// Adds an annotation to the type itself.
    fn annotated(mut self, a: Annotation) -> Type {
        self.annotations.push(a);
        self
    }

    /// Makes the last field an array.
    fn array(mut self) -> Type {
        self.last().array = true;
        self
    }
}

fn annotation_types() -> Vec<Type> {
    let valued = |i, n| Type::annotation(i, n).field("value", id::STRING, "Value");
    let marker = |i, n, label: &str| {
        Type::annotation(i, n)
            .label(label)
            .annotated(Annotation::ContentType)
    };
    vec![
        valued(id::LABEL, "jdk.jfr.Label"),
        valued(id::DESCRIPTION, "jdk.jfr.Description"),
        valued(id::CATEGORY, "jdk.jfr.Category").array(),
        Type::annotation(id::CONTENT_TYPE, "jdk.jfr.ContentType").label("Content Type"),
        valued(id::TIMESTAMP, "jdk.jfr.Timestamp").annotated(Annotation::ContentType),
        valued(id::TIMESPAN, "jdk.jfr.Timespan").annotated(Annotation::ContentType),
        valued(id::DATA_AMOUNT, "jdk.jfr.DataAmount").annotated(Annotation::ContentType),
        marker(id::UNSIGNED, "jdk.jfr.Unsigned", "Unsigned Value"),
        marker(
            id::MEMORY_ADDRESS,
            "jdk.jfr.MemoryAddress",
            "Memory Address",
        ),
    ]
}

const PROFILING: &[&str] = &["Java Virtual Machine", "Profiling"];
const JAVA_APPLICATION: &[&str] = &["Java Application"];
const JVM: &[&str] = &["Java Virtual Machine"];
const CLASS_LOADING: &[&str] = &["Java Virtual Machine", "Class Loading"];

fn event_types() -> Vec<Type> {
    use id::*;
    vec![
        Type::event(
            EXECUTION_SAMPLE,
            "jdk.ExecutionSample",
            "Method Profiling Sample",
            PROFILING,
        )
        .pooled("sampledThread", THREAD, "Thread")
        .stack_trace()
        .pooled("state", THREAD_STATE, "Thread State"),
        // async-profiler's wall-clock sample, as its converter and jscope read it.
        Type::event(
            WALL_CLOCK_SAMPLE,
            "profiler.WallClockSample",
            "Wall Clock Sample",
            PROFILING,
        )
        .pooled("sampledThread", THREAD, "Thread")
        .stack_trace()
        .pooled("state", THREAD_STATE, "Thread State")
        .field("samples", INT, "Samples")
        .with(Annotation::Unsigned)
        .field("timeSpan", LONG, "Time Span")
        .with(Annotation::Timespan("TICKS")),
        Type::event(
            THREAD_SNAPSHOT,
            "jscope.ThreadSnapshot",
            "Thread Snapshot",
            PROFILING,
        )
        .field("interval", LONG, "Interval")
        .with(Annotation::Timespan("NANOSECONDS"))
        .field("threads", INT, "Threads")
        .with(Annotation::Unsigned),
        // The JDK's fields; `objectSize` is jscope's, after them (readers that
        // read the JDK's fields by position stop before it).
        Type::event(
            ALLOCATION_SAMPLE,
            "jdk.ObjectAllocationSample",
            "Object Allocation Sample",
            JAVA_APPLICATION,
        )
        .event_thread()
        .stack_trace()
        .pooled("objectClass", CLASS, "Object Class")
        .field("weight", LONG, "Sample Weight")
        .with(Annotation::DataAmount)
        .field("objectSize", LONG, "Object Size")
        .with(Annotation::DataAmount),
        Type::event(
            MONITOR_ENTER,
            "jdk.JavaMonitorEnter",
            "Java Monitor Blocked",
            JAVA_APPLICATION,
        )
        .duration()
        .event_thread()
        .stack_trace()
        .pooled("monitorClass", CLASS, "Monitor Class")
        .pooled("previousOwner", THREAD, "Previous Monitor Owner")
        .address("Monitor Address"),
        Type::event(
            MONITOR_WAIT,
            "jdk.JavaMonitorWait",
            "Java Monitor Wait",
            JAVA_APPLICATION,
        )
        .duration()
        .event_thread()
        .stack_trace()
        .pooled("monitorClass", CLASS, "Monitor Class")
        .pooled("notifier", THREAD, "Notifier Thread")
        .field("timeout", LONG, "Timeout")
        .with(Annotation::Timespan("MILLISECONDS"))
        .field("timedOut", BOOLEAN, "Timed Out")
        .address("Monitor Address"),
        Type::event(
            THREAD_PARK,
            "jdk.ThreadPark",
            "Java Thread Park",
            JAVA_APPLICATION,
        )
        .duration()
        .event_thread()
        .stack_trace()
        .pooled("parkedClass", CLASS, "Class Parked On")
        .field("timeout", LONG, "Park Timeout")
        .with(Annotation::Timespan("NANOSECONDS"))
        .field("until", LONG, "Park Until")
        .with(Annotation::Timestamp("MILLISECONDS_SINCE_EPOCH"))
        .address("Address of Object Parked"),
        Type::event(
            GARBAGE_COLLECTION,
            "jdk.GarbageCollection",
            "Garbage Collection",
            &["Java Virtual Machine", "GC", "Collector"],
        )
        .duration()
        .event_thread()
        .field("gcId", INT, "GC Identifier")
        .with(Annotation::Unsigned)
        .pooled("name", GC_NAME, "Name")
        .pooled("cause", GC_CAUSE, "Cause")
        .field("sumOfPauses", LONG, "Sum of Pauses")
        .with(Annotation::Timespan("TICKS"))
        .field("longestPause", LONG, "Longest Pause")
        .with(Annotation::Timespan("TICKS")),
        Type::event(
            THREAD_START,
            "jdk.ThreadStart",
            "Java Thread Start",
            JAVA_APPLICATION,
        )
        .event_thread()
        .stack_trace()
        .pooled("thread", THREAD, "New Java Thread")
        .pooled("parentThread", THREAD, "Parent Java Thread"),
        Type::event(
            THREAD_END,
            "jdk.ThreadEnd",
            "Java Thread End",
            JAVA_APPLICATION,
        )
        .event_thread()
        .pooled("thread", THREAD, "Java Thread"),
        // JDK 25's method tracing.
        Type::event(
            METHOD_TRACE,
            "jdk.MethodTrace",
            "Method Trace",
            &["Java Virtual Machine", "Method Tracing"],
        )
        .duration()
        .event_thread()
        .stack_trace()
        .pooled("method", METHOD, "Method"),
        Type::event(
            JVM_INFORMATION,
            "jdk.JVMInformation",
            "JVM Information",
            JVM,
        )
        .field("jvmName", STRING, "JVM Name")
        .field("jvmVersion", STRING, "JVM Version")
        .field("jvmArguments", STRING, "JVM Command Line Arguments")
        .field("jvmFlags", STRING, "JVM Settings File Arguments")
        .field("javaArguments", STRING, "Java Application Arguments")
        .field("jvmStartTime", LONG, "JVM Start Time")
        .with(Annotation::Timestamp("MILLISECONDS_SINCE_EPOCH"))
        .field("pid", LONG, "Process Identifier"),
        Type::event(
            OS_INFORMATION,
            "jdk.OSInformation",
            "OS Information",
            &["Operating System"],
        )
        .field("osVersion", STRING, "OS Version"),
        Type::event(
            CPU_INFORMATION,
            "jdk.CPUInformation",
            "CPU Information",
            &["Operating System", "Processor"],
        )
        .field("cpu", STRING, "Type")
        .field("description", STRING, "Description")
        .field("sockets", INT, "Sockets")
        .with(Annotation::Unsigned)
        .field("cores", INT, "Cores")
        .with(Annotation::Unsigned)
        .field("hwThreads", INT, "Hardware Threads")
        .with(Annotation::Unsigned),
        Type::event(
            ACTIVE_SETTING,
            "jdk.ActiveSetting",
            "Recording Setting",
            &["Flight Recorder"],
        )
        .field("id", LONG, "Event Id")
        .field("name", STRING, "Setting Name")
        .field("value", STRING, "Setting Value"),
        // What a jscope recording's header says that no JDK event holds (host,
        // vendor, the agent, how native stacks were walked, ...).
        Type::event(
            HEADER,
            "jscope.Header",
            "jscope Recording Header",
            &["jscope"],
        )
        .field("key", STRING, "Key")
        .field("value", STRING, "Value"),
        // The traced call that started a thread: the starting thread's trace events
        // before it (jscope's trace tree links the started thread's calls there).
        Type::event(
            THREAD_START_CALL,
            "jscope.ThreadStartCall",
            "Thread Start Call",
            &["jscope"],
        )
        .event_thread()
        .field("startedThreadId", LONG, "Started Java Thread Id")
        .field("traceEvents", LONG, "Trace Events Before"),
        Type::event(CLASS_LOAD, "jdk.ClassLoad", "Class Load", CLASS_LOADING)
            .duration()
            .event_thread()
            .stack_trace()
            .pooled("loadedClass", CLASS, "Loaded Class")
            .pooled("definingClassLoader", CLASS_LOADER, "Defining Class Loader")
            .pooled(
                "initiatingClassLoader",
                CLASS_LOADER,
                "Initiating Class Loader",
            ),
        Type::event(
            CLASS_UNLOAD,
            "jdk.ClassUnload",
            "Class Unload",
            CLASS_LOADING,
        )
        .event_thread()
        .pooled("unloadedClass", CLASS, "Unloaded Class")
        .pooled("definingClassLoader", CLASS_LOADER, "Defining Class Loader"),
        Type::event(
            COMPILATION,
            "jdk.Compilation",
            "Compilation",
            &["Java Virtual Machine", "Compiler"],
        )
        .duration()
        .event_thread()
        .field("compileId", INT, "Compilation Identifier")
        .field("compiler", STRING, "Compiler")
        .pooled("method", METHOD, "Method")
        .field("compileLevel", SHORT, "Compilation Level")
        .with(Annotation::Unsigned)
        .field("succeded", BOOLEAN, "Succeeded")
        .field("isOsr", BOOLEAN, "On Stack Replacement")
        .field("codeSize", LONG, "Compiled Code Size")
        .with(Annotation::Unsigned)
        .with(Annotation::DataAmount)
        .field("inlinedBytes", LONG, "Inlined Code Size")
        .with(Annotation::Unsigned)
        .with(Annotation::DataAmount),
        // What the agent tracks that the JDK does not: a tagged object freed (its
        // age in bytes is the allocation clock's advance), compiled code unloaded.
        Type::event(
            OBJECT_FREE,
            "jscope.ObjectFree",
            "Object Freed",
            &["jscope"],
        )
        .field("object", LONG, "Object")
        .field("allocatedTotal", LONG, "Allocated Bytes So Far")
        .with(Annotation::DataAmount),
        Type::event(
            COMPILED_UNLOAD,
            "jscope.CompiledUnload",
            "Compiled Code Unloaded",
            &["jscope"],
        )
        .pooled("method", METHOD, "Method"),
        // The agent's counters at the end (samples, drops, failed walks, ...).
        Type::event(COUNTER, "jscope.Counter", "jscope Counter", &["jscope"])
            .field("name", STRING, "Name")
            .field("value", LONG, "Value"),
    ]
}

/// A user event name's own type: `jscope.user.<name>` (characters a Java name
/// cannot have become `_`), labelled with the name as it was registered.
fn user_event_type(type_id: i64, name: &str) -> Type {
    Type::event(
        type_id,
        &user_event_type_name(name),
        name,
        &["jscope", "User Events"],
    )
    .event_thread()
    .field("kind", id::STRING, "Kind")
    .with(Annotation::Description("instant, begin or end"))
    .field("value", id::LONG, "Value")
}

pub(crate) fn user_event_type_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '$') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{USER_EVENT_PREFIX}{safe}")
}

/// An element of the metadata tree, before its strings are numbered.
struct Element {
    name: &'static str,
    attributes: Vec<(String, String)>,
    children: Vec<Element>,
}

impl Element {
    fn new(name: &'static str) -> Element {
        Element {
            name,
            attributes: Vec::new(),
            children: Vec::new(),
        }
    }

    fn attr(mut self, k: &str, v: impl ToString) -> Element {
        self.attributes.push((k.to_string(), v.to_string()));
        self
    }
}

fn annotation_element(a: &Annotation) -> Element {
    let e = Element::new("annotation");
    let value = |e: Element, ty: i64, v: &str| e.attr("class", ty).attr("value", v);
    match a {
        Annotation::Label(l) => value(e, id::LABEL, l),
        Annotation::Description(d) => value(e, id::DESCRIPTION, d),
        Annotation::Category(parts) => {
            let mut e = e.attr("class", id::CATEGORY);
            for (i, p) in parts.iter().enumerate() {
                e = e.attr(&format!("value-{i}"), p);
            }
            e
        }
        Annotation::ContentType => e.attr("class", id::CONTENT_TYPE),
        Annotation::Timestamp(u) => value(e, id::TIMESTAMP, u),
        Annotation::Timespan(u) => value(e, id::TIMESPAN, u),
        Annotation::Unsigned => e.attr("class", id::UNSIGNED),
        Annotation::DataAmount => value(e, id::DATA_AMOUNT, "BYTES"),
        Annotation::MemoryAddress => e.attr("class", id::MEMORY_ADDRESS),
    }
}

fn type_element(t: &Type) -> Element {
    let mut e = Element::new("class").attr("name", &t.name).attr("id", t.id);
    if let Some(s) = t.super_type {
        e = e.attr("superType", s);
    }
    if t.simple {
        e = e.attr("simpleType", "true");
    }
    for f in &t.fields {
        let mut fe = Element::new("field")
            .attr("name", f.name)
            .attr("class", f.ty);
        if f.cpool {
            fe = fe.attr("constantPool", "true");
        }
        if f.array {
            fe = fe.attr("dimension", "1");
        }
        fe.children = f.annotations.iter().map(annotation_element).collect();
        e.children.push(fe);
    }
    e.children
        .extend(t.annotations.iter().map(annotation_element));
    e
}

/// The body of the metadata event (type 0): its string table, then the tree
/// `root { metadata { class... } region }`. `metadata_id` must differ between
/// chunks of one file whose metadata differ: the JDK reuses the previous chunk's
/// types when the ids are equal.
pub(crate) fn metadata_event(types: &[Type], start_ticks: i64, metadata_id: i64) -> Vec<u8> {
    let mut metadata = Element::new("metadata");
    metadata.children = types.iter().map(type_element).collect();
    let region = Element::new("region")
        .attr("locale", "en_US")
        .attr("gmtOffset", 0)
        .attr("dst", 0);
    let mut root = Element::new("root");
    root.children = vec![metadata, region];

    let mut strings = Strings::default();
    let mut tree = Out::default();
    write_element(&root, &mut strings, &mut tree);
    let mut body = Out::default();
    body.long(0); // the metadata event's type
    body.long(start_ticks);
    body.long(0); // duration
    body.long(metadata_id);
    body.int(strings.list.len() as i32);
    for s in &strings.list {
        body.utf8(s);
    }
    body.buf.extend_from_slice(&tree.buf);
    let mut event = Out::default();
    event.event(&body.buf);
    event.buf
}

#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: std::collections::HashMap<String, i32>,
}

impl Strings {
    fn of(&mut self, s: &str) -> i32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as i32;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

fn write_element(e: &Element, strings: &mut Strings, out: &mut Out) {
    out.int(strings.of(e.name));
    out.int(e.attributes.len() as i32);
    for (k, v) in &e.attributes {
        out.int(strings.of(k));
        out.int(strings.of(v));
    }
    out.int(e.children.len() as i32);
    for c in &e.children {
        write_element(c, strings, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_refers_to_a_declared_type_and_ids_are_unique() {
        let types = all_types(&["checkout".into(), "db query".into()]);
        let ids: std::collections::HashSet<i64> = types.iter().map(|t| t.id).collect();
        assert_eq!(ids.len(), types.len(), "duplicate ids");
        assert!(!ids.contains(&0) && !ids.contains(&1));
        for t in &types {
            for f in &t.fields {
                assert!(ids.contains(&f.ty), "{}.{} -> {}", t.name, f.name, f.ty);
            }
        }
    }

    #[test]
    fn events_start_with_their_time_then_duration_as_the_jdk_parser_expects() {
        for t in event_types() {
            assert_eq!(t.fields[0].name, "startTime", "{}", t.name);
            if let Some(i) = t.fields.iter().position(|f| f.name == "duration") {
                assert_eq!(i, 1, "{}", t.name);
            }
        }
    }

    #[test]
    fn user_event_names_become_type_names() {
        assert_eq!(
            user_event_type_name("order.placed"),
            "jscope.user.order.placed"
        );
        assert_eq!(
            user_event_type_name("db query/ms"),
            "jscope.user.db_query_ms"
        );
    }
}
