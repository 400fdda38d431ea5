//! Helpers of the report's tests: the fixtures, and the page read back as an XML element tree
//! (quick-xml), which also checks that it is well-formed and self-contained.
// Each test crate uses a part of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use quick_xml::events::Event;
use quick_xml::Reader;

/// A file of tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

// ---------------------------------------------------------------------------------------------
// A small element tree from quick-xml, which also checks well-formedness.

#[derive(Debug, Default)]
pub struct Node {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Child>,
}

#[derive(Debug)]
pub enum Child {
    Node(Node),
    Text(String),
}

impl Node {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Every descendant element with this name, in document order.
    fn all<'a>(&'a self, name: &str, out: &mut Vec<&'a Node>) {
        for c in &self.children {
            if let Child::Node(n) = c {
                if n.name == name {
                    out.push(n);
                }
                n.all(name, out);
            }
        }
    }

    pub fn find(&self, name: &str) -> Vec<&Node> {
        let mut out = Vec::new();
        self.all(name, &mut out);
        out
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.children {
            match c {
                Child::Text(t) => out.push_str(t),
                Child::Node(n) => out.push_str(&n.text()),
            }
        }
        out
    }

    pub fn element_children(&self) -> Vec<&Node> {
        self.children
            .iter()
            .filter_map(|c| match c {
                Child::Node(n) => Some(n),
                Child::Text(_) => None,
            })
            .collect()
    }
}

/// Parses the page as XML: every element closed, end tags matching, attributes quoted and
/// unique, only XML's predefined entities and character references.
pub fn parse(html: &str) -> Result<Node, String> {
    let mut reader = Reader::from_str(html);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Node> = vec![Node { name: "#document".into(), ..Node::default() }];
    let mut doctype = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("at byte {}: {e}", reader.buffer_position()))?;
        match event {
            Event::DocType(d) => {
                let d = d.decode().map_err(|e| e.to_string())?;
                if d.trim() != "html" {
                    return Err(format!("doctype {d:?}"));
                }
                doctype = true;
            }
            Event::Start(e) => {
                stack.push(element(&e)?);
            }
            Event::Empty(e) => {
                let node = element(&e)?;
                stack.last_mut().unwrap().children.push(Child::Node(node));
            }
            Event::End(e) => {
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                let node = stack.pop().ok_or("end tag without start")?;
                if node.name != name {
                    return Err(format!("</{name}> closes <{}>", node.name));
                }
                stack.last_mut().ok_or("closed the document")?.children.push(Child::Node(node));
            }
            Event::Text(t) => {
                let t = t.decode().map_err(|e| e.to_string())?.into_owned();
                stack.last_mut().unwrap().children.push(Child::Text(t));
            }
            Event::GeneralRef(r) => {
                let c = if r.is_char_ref() {
                    r.resolve_char_ref().map_err(|e| e.to_string())?.ok_or("bad char ref")?
                } else {
                    match &*r {
                        b"amp" => '&',
                        b"lt" => '<',
                        b"gt" => '>',
                        b"quot" => '"',
                        b"apos" => '\'',
                        other => {
                            return Err(format!("entity &{};", String::from_utf8_lossy(other)))
                        }
                    }
                };
                stack.last_mut().unwrap().children.push(Child::Text(c.to_string()));
            }
            Event::Comment(_) => {}
            Event::Eof => break,
            other => return Err(format!("unexpected {other:?}")),
        }
    }
    if !doctype {
        return Err("no <!DOCTYPE html>".into());
    }
    let mut doc = stack.pop().ok_or("empty")?;
    if !stack.is_empty() {
        return Err(format!("<{}> never closed", doc.name));
    }
    let roots: Vec<Node> = doc
        .children
        .drain(..)
        .filter_map(|c| match c {
            Child::Node(n) => Some(n),
            Child::Text(t) if t.trim().is_empty() => None,
            Child::Text(t) => Some(Node { name: format!("#text {t:?}"), ..Node::default() }),
        })
        .collect();
    match <[Node; 1]>::try_from(roots) {
        Ok([root]) if root.name == "html" => Ok(root),
        Ok([other]) => Err(format!("root <{}>", other.name)),
        Err(v) => Err(format!("{} top-level nodes", v.len())),
    }
}

fn element(e: &quick_xml::events::BytesStart) -> Result<Node, String> {
    let name = String::from_utf8(e.name().as_ref().to_vec()).map_err(|e| e.to_string())?;
    let mut attrs = Vec::new();
    for a in e.attributes() {
        let a = a.map_err(|e| format!("<{name}>: {e}"))?;
        let key = String::from_utf8(a.key.as_ref().to_vec()).unwrap();
        let value = a.unescape_value().map_err(|e| format!("<{name} {key}>: {e}"))?.into_owned();
        attrs.push((key, value));
    }
    Ok(Node { name, attrs, children: Vec::new() })
}

/// Nothing fetched and nothing run: no URL, script, import or external reference, outside the
/// texts the user supplied (given here escaped, as they appear in the page).
pub fn assert_self_contained(html: &str, user_texts: &[&str]) {
    let mut page = html.to_string();
    for t in user_texts {
        page = page.replace(t, "");
    }
    for bad in [
        "http://",
        "https://",
        "<script",
        "@import",
        "url(",
        "<link",
        "<img",
        "<iframe",
        " src=",
        "javascript:",
    ] {
        assert!(!page.contains(bad), "the page contains {bad:?}");
    }
    // No event handler attribute (onload=…) on any element.
    let root = parse(html).unwrap();
    let mut stack = vec![&root];
    while let Some(n) = stack.pop() {
        for (k, _) in &n.attrs {
            assert!(!k.starts_with("on"), "<{} {k}>", n.name);
        }
        stack.extend(n.element_children());
    }
}

/// The rows of every table, as cell texts.
pub fn rows(root: &Node) -> Vec<Vec<String>> {
    root.find("tr")
        .iter()
        .map(|tr| tr.element_children().iter().map(|c| c.text()).collect())
        .collect()
}
