//! Chart colours: every model on one chart gets its own colour, however many there are.
//!
//! Chart.js's built-in palette has seven colours and repeats them, so the eighth model of a
//! busy tenant looked like the first. The series of a chart are coloured by their position
//! (models sorted by name, so one model has one colour on the cost and the token chart alike):
//! hues step by the golden angle, which keeps neighbours far apart on the wheel for any count,
//! and the lightness alternates so two close hues still differ. The figures are also in the
//! tables beside each chart: colour is never the only way to read them.

/// The golden angle in degrees: successive hues never fall close to each other.
const GOLDEN_ANGLE: f64 = 137.507_764;

/// The CSS colour of the `index`-th series of a chart.
pub fn series_colour(index: usize) -> String {
    let hue = (index as f64 * GOLDEN_ANGLE) % 360.0;
    let lightness = if index.is_multiple_of(2) { 45 } else { 62 };
    format!("hsl({hue:.1}, 62%, {lightness}%)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_first_series_colours_are_fixed() {
        let table = [
            (0, "hsl(0.0, 62%, 45%)"),
            (1, "hsl(137.5, 62%, 62%)"),
            (2, "hsl(275.0, 62%, 45%)"),
            (3, "hsl(52.5, 62%, 62%)"),
        ];
        for (index, expected) in table {
            assert_eq!(series_colour(index), expected, "{index}");
        }
    }

    #[test]
    fn two_hundred_series_are_two_hundred_colours() {
        let colours: HashSet<String> = (0..200).map(series_colour).collect();
        assert_eq!(colours.len(), 200);
    }

    #[test]
    fn neighbours_are_far_apart_on_the_wheel() {
        for index in 0..100 {
            let hue = |i: usize| (i as f64 * GOLDEN_ANGLE) % 360.0;
            let gap = (hue(index) - hue(index + 1)).abs();
            let around = gap.min(360.0 - gap);
            assert!(around > 100.0, "{index}: {around}");
        }
    }
}
