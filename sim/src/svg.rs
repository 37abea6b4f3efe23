//! A picture of a schedule: which SM ran each CTA of the original grid.
//!
//! Clustering is about placing CTAs that share data on one SM; a map of the
//! original grid coloured by SM shows at a glance whether a schedule made
//! compact clusters (blocks of one colour), scattered them (confetti), or
//! lost CTAs (black cells with a red cross: a bug, since every original CTA
//! must run exactly once).

use std::fmt::Write;

/// One map: an original grid and the SM that ran each of its CTAs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmMapPanel {
    /// Caption above the map (escaped on output).
    pub title: String,
    /// Original grid `[x, y]`, z folded into y (y = z * grid_y + y).
    pub grid: [u32; 2],
    /// SM of each CTA, row-major by original linear id; `None`: never ran.
    /// Missing entries (a shorter vector) are drawn as never run.
    pub sm_of_task: Vec<Option<u32>>,
    /// Number of SMs (for the caption).
    pub sm_count: u32,
}

/// Widest (and tallest) a panel's map may be, in pixels.
const PANEL_PX: f64 = 480.0;
/// Largest cell side, so that tiny grids do not become huge squares.
const MAX_CELL_PX: f64 = 24.0;
const MARGIN_PX: f64 = 16.0;
const GAP_PX: f64 = 24.0;
const TITLE_PX: f64 = 22.0;
const CAPTION_PX: f64 = 36.0;
/// Smallest cell that gets an outline.
const OUTLINE_FROM_PX: f64 = 6.0;
/// Narrowest a panel may be, to leave its title some room.
const MIN_PANEL_PX: f64 = 200.0;

/// A standalone SVG document with `panels` side by side, titles above and a
/// caption below. Each CTA is one square `<rect>` filled with its SM's colour
/// ([`sm_colour`]); a CTA that never ran is black with a red cross.
pub fn sm_map_svg(panels: &[SmMapPanel]) -> String {
    let layouts: Vec<PanelLayout> = panels.iter().map(PanelLayout::of).collect();
    let maps_width: f64 = layouts.iter().map(|layout| layout.width).sum::<f64>()
        + GAP_PX * layouts.len().saturating_sub(1) as f64;
    let width = (2.0 * MARGIN_PX + maps_width).max(PANEL_PX);
    let maps_height = layouts
        .iter()
        .map(|layout| layout.height)
        .fold(0.0, f64::max);
    let height = 2.0 * MARGIN_PX + TITLE_PX + maps_height + CAPTION_PX;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" style="background:white">"#
    );
    let mut left = MARGIN_PX;
    for (panel, layout) in panels.iter().zip(&layouts) {
        write_panel(&mut svg, panel, layout, left, MARGIN_PX);
        left += layout.width + GAP_PX;
    }
    let caption_top = MARGIN_PX + TITLE_PX + maps_height + 18.0;
    let _ = writeln!(
        svg,
        r##"<text x="{MARGIN_PX}" y="{caption_top:.1}" font-size="12" fill="#333">One square per CTA of the original grid (x to the right, y down, z folded into y), coloured by the SM that ran it.</text>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="{MARGIN_PX}" y="{:.1}" font-size="12" fill="#333">Black with a red cross: never ran.</text>"##,
        caption_top + 15.0
    );
    svg.push_str("</svg>\n");
    svg
}

/// Cell size and extent of one panel's map.
#[derive(Clone, Copy, Debug)]
struct PanelLayout {
    cell: f64,
    width: f64,
    height: f64,
}

impl PanelLayout {
    /// Square cells as large as fit in [`PANEL_PX`] both ways, at most
    /// [`MAX_CELL_PX`].
    fn of(panel: &SmMapPanel) -> Self {
        let [x, y] = panel.grid;
        let longest = f64::from(x.max(y).max(1));
        let cell = (PANEL_PX / longest).min(MAX_CELL_PX);
        Self {
            cell,
            width: (f64::from(x) * cell).max(MIN_PANEL_PX),
            height: f64::from(y) * cell,
        }
    }
}

/// Writes one panel's title and cells with its top-left corner at
/// (`left`, `top`).
fn write_panel(svg: &mut String, panel: &SmMapPanel, layout: &PanelLayout, left: f64, top: f64) {
    let ran = panel.sm_of_task.iter().flatten().count();
    let _ = writeln!(
        svg,
        r#"<text x="{left:.1}" y="{:.1}" font-size="14">{} ({}x{} CTAs, {} SMs{})</text>"#,
        top + 14.0,
        escape(&panel.title),
        panel.grid[0],
        panel.grid[1],
        panel.sm_count,
        match cells(panel).saturating_sub(ran as u64) {
            0 => String::new(),
            lost => format!(", {lost} never ran"),
        }
    );
    let map_top = top + TITLE_PX;
    let cell = layout.cell;
    let mut crosses = String::new();
    // Cells large enough to count get a thin white outline.
    let outline = if cell >= OUTLINE_FROM_PX {
        r##" stroke="#fff" stroke-width="0.5""##
    } else {
        ""
    };
    let _ = writeln!(svg, "<g{outline}>");
    for row in 0..panel.grid[1] {
        for column in 0..panel.grid[0] {
            let task = u64::from(row) * u64::from(panel.grid[0]) + u64::from(column);
            let x = left + f64::from(column) * cell;
            let y = map_top + f64::from(row) * cell;
            let sm = usize::try_from(task)
                .ok()
                .and_then(|task| panel.sm_of_task.get(task).copied().flatten());
            let fill = sm.map_or_else(|| "#000".to_string(), sm_colour);
            let _ = writeln!(
                svg,
                r#"<rect x="{x:.2}" y="{y:.2}" width="{cell:.2}" height="{cell:.2}" fill="{fill}"/>"#
            );
            if sm.is_none() {
                let _ = write!(
                    crosses,
                    "M{x:.2} {y:.2}l{cell:.2} {cell:.2}M{:.2} {y:.2}l{:.2} {cell:.2}",
                    x + cell,
                    -cell
                );
            }
        }
    }
    svg.push_str("</g>\n");
    if !crosses.is_empty() {
        let stroke = (cell / 8.0).clamp(0.5, 2.0);
        let _ = writeln!(
            svg,
            r#"<path class="never-ran" d="{crosses}" stroke="red" stroke-width="{stroke:.2}" fill="none"/>"#
        );
    }
}

/// Number of cells of a panel's grid.
fn cells(panel: &SmMapPanel) -> u64 {
    u64::from(panel.grid[0]) * u64::from(panel.grid[1])
}

/// The colour of SM `sm`: hues a golden-ratio turn apart (so consecutive SM
/// ids, often neighbours in a schedule, get very different hues and no two of
/// the first few hundred coincide), with three lightness levels cycling to
/// separate SMs whose hues come close.
pub fn sm_colour(sm: u32) -> String {
    const GOLDEN_TURN: f64 = 0.618_033_988_749_895;
    let hue = (f64::from(sm) * GOLDEN_TURN).fract() * 360.0;
    let lightness = [50, 65, 38][sm as usize % 3];
    format!("hsl({hue:.1},70%,{lightness}%)")
}

/// `text` with the five XML special characters escaped.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that `document` is well-formed enough: tags balance and nest,
    /// attribute values are quoted, and text holds no raw `<` or stray `&`.
    /// Returns the element names in order of opening.
    fn check_xml(document: &str) -> Result<Vec<String>, String> {
        let mut open: Vec<String> = Vec::new();
        let mut elements = Vec::new();
        let mut rest = document;
        while let Some(start) = rest.find('<') {
            check_text(&rest[..start])?;
            let end = rest[start..].find('>').ok_or("unclosed tag")? + start;
            let tag = &rest[start + 1..end];
            rest = &rest[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                match open.pop() {
                    Some(opened) if opened == name.trim() => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
                continue;
            }
            let self_closing = tag.ends_with('/');
            let body = tag.trim_end_matches('/');
            let name = body
                .split_whitespace()
                .next()
                .ok_or("empty tag")?
                .to_string();
            check_attributes(&body[name.len()..])?;
            elements.push(name.clone());
            if !self_closing {
                open.push(name);
            }
        }
        check_text(rest)?;
        if open.is_empty() {
            Ok(elements)
        } else {
            Err(format!("unclosed elements {open:?}"))
        }
    }

    fn check_text(text: &str) -> Result<(), String> {
        for (index, _) in text.match_indices('&') {
            let entity = &text[index..];
            let known = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"];
            if !known.iter().any(|known| entity.starts_with(known)) {
                return Err(format!("stray & in {text:?}"));
            }
        }
        Ok(())
    }

    /// Attributes are `name="value"` pairs whose values hold no `"` or `<`.
    fn check_attributes(mut attributes: &str) -> Result<(), String> {
        loop {
            attributes = attributes.trim_start();
            if attributes.is_empty() {
                return Ok(());
            }
            let equals = attributes
                .find("=\"")
                .ok_or(format!("bad attribute {attributes:?}"))?;
            let value_and_rest = &attributes[equals + 2..];
            let close = value_and_rest.find('"').ok_or("unterminated value")?;
            let value = &value_and_rest[..close];
            if value.contains('<') {
                return Err(format!("raw < in attribute value {value:?}"));
            }
            check_text(value)?;
            attributes = &value_and_rest[close + 1..];
        }
    }

    fn panel(title: &str, grid: [u32; 2], sm_of_task: Vec<Option<u32>>) -> SmMapPanel {
        SmMapPanel {
            title: title.to_string(),
            grid,
            sm_of_task,
            sm_count: 4,
        }
    }

    #[test]
    fn checker_rejects_broken_documents() {
        assert!(check_xml("<a><b></a></b>").is_err());
        assert!(check_xml("<a>").is_err());
        assert!(check_xml("<a>x & y</a>").is_err());
        assert!(check_xml(r#"<a x="1"><b/></a>"#).is_ok());
    }

    #[test]
    fn one_rect_per_cell_and_lost_cells_crossed() {
        let mut sms: Vec<Option<u32>> = (0..12).map(|task| Some(task % 4)).collect();
        sms[5] = None;
        let panels = [
            panel("row-major <4 SMs> & \"agents\"", [4, 3], sms),
            // A short vector: the 2 missing cells never ran.
            panel("short", [2, 2], vec![Some(0), Some(1)]),
        ];
        let svg = sm_map_svg(&panels);
        let elements = check_xml(&svg).unwrap_or_else(|error| panic!("{error}\n{svg}"));
        assert_eq!(elements[0], "svg");
        assert!(svg.contains(r#"xmlns="http://www.w3.org/2000/svg""#));
        assert_eq!(
            elements.iter().filter(|name| *name == "rect").count(),
            12 + 4
        );
        // Black cells: the one lost in the first panel, two in the second.
        assert_eq!(svg.matches(r##"fill="#000""##).count(), 3);
        // One cross path per panel with lost cells, two strokes per cell.
        assert_eq!(svg.matches(r#"class="never-ran""#).count(), 2);
        let crosses: usize = svg
            .lines()
            .filter(|line| line.contains("never-ran"))
            .map(|line| line.matches('M').count())
            .sum();
        assert_eq!(crosses, 2 * 3);
        assert!(svg.contains("row-major &lt;4 SMs&gt; &amp; &quot;agents&quot;"));
        assert!(svg.contains("1 never ran"));
        assert!(svg.contains("2 never ran"));
    }

    #[test]
    fn cells_fit_the_panel_width() {
        let wide = panel("wide", [960, 2], vec![Some(1); 1920]);
        assert_eq!(PanelLayout::of(&wide).cell, 0.5);
        let svg = sm_map_svg(&[wide]);
        // The last cell starts at the margin (16) + 959 * 0.5.
        assert!(svg.contains(r#"<rect x="495.50""#));
        assert!(!svg.contains(r#"<rect x="496"#));
        assert_eq!(svg.matches("<rect").count(), 1920);
        let tiny = panel("tiny", [2, 1], vec![Some(0), Some(1)]);
        assert_eq!(PanelLayout::of(&tiny).cell, MAX_CELL_PX);
    }

    #[test]
    fn colours_of_neighbouring_sms_differ() {
        let colours: Vec<String> = (0..132).map(sm_colour).collect();
        let mut distinct = colours.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 132);
        assert_ne!(sm_colour(0), sm_colour(1));
    }

    #[test]
    fn no_panels_is_still_a_document() {
        let svg = sm_map_svg(&[]);
        assert!(check_xml(&svg).is_ok());
        assert!(!svg.contains("<rect"));
    }
}
