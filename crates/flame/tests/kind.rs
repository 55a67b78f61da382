//! The frame colouring rule: kinds by name, hues by kind, Java hues by package.

use jscope_flame::{classify, colour, display_name, FrameKind};

#[test]
fn java_frames_split_into_application_and_jdk() {
    for name in [
        "com.example.Foo.bar",
        "com.example.Foo.bar_[j]",
        "Main.main_[0]",
        "com.sunny.App.run",
    ] {
        assert_eq!(classify(name), FrameKind::Java, "{name}");
    }
    for name in [
        "java.lang.String.indexOf",
        "jdk/internal/misc/Unsafe.park",
        "sun.nio.ch.EPoll.wait_[i]",
        "javax.crypto.Cipher.doFinal",
        "com.sun.crypto.provider.AESCrypt.encryptBlock",
        "java.util.HashMap.get(Ljava/lang/Object;)Ljava/lang/Object;",
        "java.util.stream.ReferencePipeline$$Lambda$14/0x0000000800c0b448.apply",
    ] {
        assert_eq!(classify(name), FrameKind::Jdk, "{name}");
    }
}

#[test]
fn native_kernel_and_internal_frames_are_recognised() {
    for name in [
        "memcpy",
        "JavaThread::run()",
        "libjvm.so",
        "libc.so.6",
        "Unsafe_Park_[n]",
        "java.lang.Thread.sleep0 [native]",
        "[native] write",
    ] {
        assert_eq!(classify(name), FrameKind::Native, "{name}");
    }
    assert_eq!(classify("do_syscall_64_[k]"), FrameKind::Kernel);
    for name in ["[unknown]", "[GC]", "[vm] safepoint"] {
        assert_eq!(classify(name), FrameKind::Internal, "{name}");
    }
}

/// Hue in degrees of a `#rrggbb` colour.
fn hue(hex: &str) -> f64 {
    let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap() as f64 / 255.0;
    let (r, g, b) = (channel(1), channel(3), channel(5));
    let (max, min) = (r.max(g).max(b), r.min(g).min(b));
    let delta = max - min;
    let h = if delta == 0.0 {
        0.0
    } else if max == r {
        60.0 * (((g - b) / delta).rem_euclid(6.0))
    } else if max == g {
        60.0 * ((b - r) / delta + 2.0)
    } else {
        60.0 * ((r - g) / delta + 4.0)
    };
    h.rem_euclid(360.0)
}

fn hue_of(name: &str) -> f64 {
    hue(&colour(name, classify(name)))
}

#[test]
fn each_kind_has_its_own_hue_band() {
    let bands = [
        ("com.example.Foo.bar", 73.0..162.0),
        ("org.other.X.y", 73.0..162.0),
        ("java.lang.String.indexOf", 186.0..224.0),
        ("memcpy", 0.0..18.0),
        ("do_syscall_64_[k]", 26.0..40.0),
        ("[unknown]", 50.0..60.0),
    ];
    for (name, band) in bands {
        let h = hue_of(name);
        assert!(band.contains(&h), "{name}: hue {h} outside {band:?}");
    }
}

#[test]
fn one_package_keeps_one_hue_and_colours_are_stable() {
    let a = hue_of("com.example.Foo.bar");
    let b = hue_of("com.example.Other.baz_[j]");
    assert!((a - b).abs() < 2.0, "{a} vs {b}");
    assert_eq!(
        colour("com.example.Foo.bar", FrameKind::Java),
        colour("com.example.Foo.bar", FrameKind::Java)
    );
    assert_ne!(
        colour("a.b.C.d", FrameKind::Java),
        colour("a.b.C.d", FrameKind::Jdk)
    );
}

#[test]
fn mixed_stack_frames_get_async_profilers_colours() {
    assert_eq!(classify("JavaThread::run [libjvm.so]"), FrameKind::Vm);
    assert_eq!(classify("write [libc.so.6]"), FrameKind::Native);
    assert_eq!(classify("0x1a2b [libspin.so]"), FrameKind::Native);
    let bands = [
        ("JavaThread::run [libjvm.so]", 58.0..70.0),
        ("write [libc.so.6]", 0.0..18.0),
        ("do_syscall_64_[k]", 26.0..40.0),
    ];
    for (name, band) in bands {
        let h = hue_of(name);
        assert!(band.contains(&h), "{name}: hue {h} outside {band:?}");
    }
}

/// Lightness in 0..=1 of a `#rrggbb` colour.
fn lightness(hex: &str) -> f64 {
    let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap() as f64 / 255.0;
    let (r, g, b) = (channel(1), channel(3), channel(5));
    (r.max(g).max(b) + r.min(g).min(b)) / 2.0
}

#[test]
fn a_java_frame_is_shaded_by_how_it_ran_and_shown_without_the_suffix() {
    let base = "com.example.Foo.bar";
    let compiled = colour(&format!("{base}_[j]"), FrameKind::Java);
    let interpreted = colour(&format!("{base}_[0]"), FrameKind::Java);
    let inlined = colour(&format!("{base}_[i]"), FrameKind::Java);
    assert_eq!(compiled, colour(base, FrameKind::Java));
    assert!(lightness(&interpreted) > lightness(&compiled) + 0.1);
    assert!(
        hue(&inlined) > hue(&compiled) + 10.0,
        "inlined leans towards aqua"
    );
    assert_ne!(interpreted, inlined);
    for suffix in ["_[j]", "_[0]", "_[i]", "_[1]", "_[c]"] {
        assert_eq!(display_name(&format!("{base}{suffix}")), base);
    }
    assert_eq!(display_name("do_syscall_64_[k]"), "do_syscall_64_[k]");
}

#[test]
fn stubs_and_class_frames_have_colours_of_their_own() {
    assert_eq!(classify("itable stub_[s]"), FrameKind::Stub);
    assert_eq!(classify("jlong_disjoint_arraycopy_[s]"), FrameKind::Stub);
    assert_eq!(classify("com.example.Circle_[t]"), FrameKind::Class);
    assert_eq!(classify("byte[]_[t]"), FrameKind::Class);
    assert_eq!(display_name("itable stub_[s]"), "itable stub");
    assert_eq!(display_name("byte[]_[t]"), "byte[]");
    let bands = [
        ("itable stub_[s]", 270.0..282.0),
        ("com.example.Circle_[t]", 320.0..345.0),
    ];
    for (name, band) in bands {
        let h = hue_of(name);
        assert!(band.contains(&h), "{name}: hue {h} outside {band:?}");
    }
    // Apart from every other kind's band, C1 shading included.
    let c1 = colour("com.example.Circle.area_[1]", FrameKind::Java);
    let compiled = colour("com.example.Circle.area_[j]", FrameKind::Java);
    assert_ne!(c1, compiled);
    assert!(lightness(&c1) > lightness(&compiled));
}
