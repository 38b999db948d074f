// The page's theme as the spec's standard style variables: style.css defines them from the
// page's own colours, light and dark; they are read back as computed, so a view gets what the
// page shows.

const STYLE_VARIABLES = [
  "--color-background-primary", "--color-background-secondary", "--color-background-tertiary",
  "--color-background-inverse", "--color-background-ghost", "--color-background-info",
  "--color-background-danger", "--color-background-success", "--color-background-warning",
  "--color-background-disabled", "--color-text-primary", "--color-text-secondary",
  "--color-text-tertiary", "--color-text-inverse", "--color-text-ghost", "--color-text-info",
  "--color-text-danger", "--color-text-success", "--color-text-warning", "--color-text-disabled",
  "--color-border-primary", "--color-border-secondary", "--color-border-tertiary",
  "--color-border-inverse", "--color-border-ghost", "--color-border-info", "--color-border-danger",
  "--color-border-success", "--color-border-warning", "--color-border-disabled",
  "--color-ring-primary", "--color-ring-secondary", "--color-ring-inverse", "--color-ring-info",
  "--color-ring-danger", "--color-ring-success", "--color-ring-warning",
  "--font-sans", "--font-mono", "--font-weight-normal", "--font-weight-medium",
  "--font-weight-semibold", "--font-weight-bold", "--font-text-xs-size", "--font-text-sm-size",
  "--font-text-md-size", "--font-text-lg-size", "--font-heading-xs-size", "--font-heading-sm-size",
  "--font-heading-md-size", "--font-heading-lg-size", "--font-heading-xl-size",
  "--font-heading-2xl-size", "--font-heading-3xl-size", "--font-text-xs-line-height",
  "--font-text-sm-line-height", "--font-text-md-line-height", "--font-text-lg-line-height",
  "--font-heading-xs-line-height", "--font-heading-sm-line-height",
  "--font-heading-md-line-height", "--font-heading-lg-line-height",
  "--font-heading-xl-line-height", "--font-heading-2xl-line-height",
  "--font-heading-3xl-line-height", "--border-radius-xs", "--border-radius-sm",
  "--border-radius-md", "--border-radius-lg", "--border-radius-xl", "--border-radius-full",
  "--border-width-regular", "--shadow-hairline", "--shadow-sm", "--shadow-md", "--shadow-lg",
];

export function hostStyles() {
  const computed = getComputedStyle(document.documentElement);
  const variables = {};
  for (const name of STYLE_VARIABLES) {
    const value = computed.getPropertyValue(name).trim();
    if (value) variables[name] = value;
  }
  // The page loads no web font (system fonts only), so there is no @font-face to pass on.
  return { variables };
}
