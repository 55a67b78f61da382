//! The Code attribute: limits, bytecode, exception table and sub-attributes (raw).

use crate::bytes::{put_len16, put_u16, put_u32, Reader};
use crate::class::{parse_attributes, write_attributes, Attribute};
use crate::ClassError;

/// One exception table row; `catch_type` 0 catches everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExceptionEntry {
    pub start: u16,
    pub end: u16,
    pub handler: u16,
    pub catch_type: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeAttribute {
    pub max_stack: u16,
    pub max_locals: u16,
    pub code: Vec<u8>,
    pub exceptions: Vec<ExceptionEntry>,
    pub attributes: Vec<Attribute>,
}

impl CodeAttribute {
    /// Parses the body of a Code attribute (after its name and length).
    pub fn parse(info: &[u8]) -> Result<Self, ClassError> {
        let bad = || ClassError::BadAttribute {
            name: "Code".into(),
        };
        let mut r = Reader::new(info);
        let max_stack = r.u16()?;
        let max_locals = r.u16()?;
        let len = r.u32()? as usize;
        let code = r.take(len).map_err(|_| bad())?.to_vec();
        let exceptions = (0..r.u16()?)
            .map(|_| {
                Ok(ExceptionEntry {
                    start: r.u16()?,
                    end: r.u16()?,
                    handler: r.u16()?,
                    catch_type: r.u16()?,
                })
            })
            .collect::<Result<_, ClassError>>()
            .map_err(|_| bad())?;
        let attributes = parse_attributes(&mut r).map_err(|_| bad())?;
        if r.remaining() != 0 {
            return Err(bad());
        }
        Ok(CodeAttribute {
            max_stack,
            max_locals,
            code,
            exceptions,
            attributes,
        })
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>, ClassError> {
        let mut out = Vec::with_capacity(self.code.len() + 32);
        put_u16(&mut out, self.max_stack);
        put_u16(&mut out, self.max_locals);
        put_u32(
            &mut out,
            u32::try_from(self.code.len()).map_err(|_| ClassError::TooLarge)?,
        );
        out.extend_from_slice(&self.code);
        put_len16(&mut out, self.exceptions.len())?;
        for e in &self.exceptions {
            for v in [e.start, e.end, e.handler, e.catch_type] {
                put_u16(&mut out, v);
            }
        }
        write_attributes(&self.attributes, &mut out)?;
        Ok(out)
    }
}
