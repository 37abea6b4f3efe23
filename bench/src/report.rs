//! Output of the bench: a speedup chart as SVG.

/// A horizontal bar chart of speedups over the baseline: one group per
/// kernel, one bar per schedule, a line at 1.0x. Bars right of the line are
/// wins (green), left are losses (red); `marked` bars (the tuner's choice)
/// are outlined.
pub fn speedup_chart_svg(title: &str, groups: &[ChartGroup]) -> String {
    const ROW: f64 = 16.0;
    const LABEL: f64 = 330.0;
    const PLOT: f64 = 420.0;
    let bars: usize = groups.iter().map(|g| g.bars.len()).sum();
    let height = 60.0 + ROW * (bars + groups.len()) as f64;
    let largest = groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.speedup))
        .fold(1.5f64, f64::max)
        .min(4.0);
    let smallest = groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.speedup))
        .fold(0.5f64, f64::min)
        .max(0.0);
    let x = |speedup: f64| {
        LABEL + PLOT * (speedup.clamp(smallest, largest) - smallest) / (largest - smallest)
    };
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" font-family="sans-serif" font-size="11">
<text x="8" y="18" font-size="14" font-weight="bold">{title}</text>
"#,
        w = LABEL + PLOT + 70.0,
        title = escape(title)
    );
    let mut y = 36.0;
    for group in groups {
        svg += &format!(
            r#"<text x="8" y="{}" font-weight="bold">{}</text>
"#,
            y + 11.0,
            escape(&group.kernel)
        );
        y += ROW;
        for bar in &group.bars {
            let (from, to) = (x(1.0).min(x(bar.speedup)), x(1.0).max(x(bar.speedup)));
            let colour = if bar.speedup >= 1.0 {
                "#3a9d5d"
            } else {
                "#c8553d"
            };
            let outline = if bar.marked {
                r#" stroke="black" stroke-width="1.5""#
            } else {
                ""
            };
            svg += &format!(
                r#"<text x="20" y="{ty}">{label}</text><rect x="{from:.1}" y="{ry}" width="{w:.1}" height="{h}" fill="{colour}"{outline}/><text x="{tx:.1}" y="{ty}">{speedup:.3}x</text>
"#,
                ty = y + 11.0,
                label = escape(&bar.label),
                ry = y + 2.0,
                w = (to - from).max(1.0),
                h = ROW - 4.0,
                tx = to + 4.0,
                speedup = bar.speedup
            );
            y += ROW;
        }
    }
    svg += &format!(
        r#"<line x1="{one:.1}" y1="28" x2="{one:.1}" y2="{y}" stroke="black" stroke-dasharray="3,2"/>
<text x="{one:.1}" y="{ly}" text-anchor="middle">1.0x (baseline); outlined: the tuner's choice</text>
</svg>
"#,
        one = x(1.0),
        ly = y + 14.0
    );
    svg
}

/// One kernel's bars.
pub struct ChartGroup {
    pub kernel: String,
    pub bars: Vec<ChartBar>,
}

/// One schedule's speedup.
pub struct ChartBar {
    pub label: String,
    pub speedup: f64,
    pub marked: bool,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bar_per_schedule_and_escaped_labels() {
        let groups = [ChartGroup {
            kernel: "a<b".into(),
            bars: vec![
                ChartBar {
                    label: "x".into(),
                    speedup: 1.2,
                    marked: true,
                },
                ChartBar {
                    label: "y".into(),
                    speedup: 0.8,
                    marked: false,
                },
            ],
        }];
        let svg = speedup_chart_svg("t", &groups);
        assert_eq!(svg.matches("<rect").count(), 2);
        assert_eq!(svg.matches("stroke=\"black\" stroke-width").count(), 1);
        assert!(svg.contains("a&lt;b") && !svg.contains("a<b"));
        assert!(svg.contains("1.200x") && svg.contains("0.800x"));
    }
}
