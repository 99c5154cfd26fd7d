package docx

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/renderq"
)

func (c *converter) document() string {
	return xml.Header + `<w:document xmlns:w="` + nsW + `" xmlns:r="` + nsR + `"><w:body>` + c.body.String() +
		`<w:sectPr><w:headerReference w:type="default" r:id="rIdHeader1"/><w:footerReference w:type="default" r:id="rIdFooter1"/>` +
		`<w:pgSz w:w="` + strconv.Itoa(pageW) + `" w:h="` + strconv.Itoa(pageH) + `"/>` +
		`<w:pgMar w:top="` + strconv.Itoa(margin) + `" w:right="` + strconv.Itoa(margin) + `" w:bottom="` + strconv.Itoa(margin) +
		`" w:left="` + strconv.Itoa(margin) + `" w:header="` + strconv.Itoa(bandDist) + `" w:footer="` + strconv.Itoa(bandDist) + `" w:gutter="0"/>` +
		`</w:sectPr></w:body></w:document>`
}

// numbering defines one bullet list (numId 1) and one restartable decimal
// list per <ol> (numId 2...).
func (c *converter) numbering() string {
	var b strings.Builder
	b.WriteString(xml.Header + `<w:numbering xmlns:w="` + nsW + `">`)
	for id, kind := range []string{"bullet", "decimal"} {
		b.WriteString(`<w:abstractNum w:abstractNumId="` + strconv.Itoa(id) + `"><w:multiLevelType w:val="hybridMultilevel"/>`)
		for lvl := range 9 {
			text, font := "•", `<w:rPr><w:rFonts w:ascii="Arial" w:hAnsi="Arial"/></w:rPr>`
			if kind == "decimal" {
				text, font = "%"+strconv.Itoa(lvl+1)+".", ""
			} else if lvl%2 == 1 {
				text = "◦"
			}
			ind := 720 + 360*lvl
			fmt.Fprintf(&b, `<w:lvl w:ilvl="%d"><w:start w:val="1"/><w:numFmt w:val="%s"/><w:lvlText w:val="%s"/><w:lvlJc w:val="left"/><w:pPr><w:ind w:left="%d" w:hanging="360"/></w:pPr>%s</w:lvl>`,
				lvl, kind, text, ind, font)
		}
		b.WriteString(`</w:abstractNum>`)
	}
	b.WriteString(`<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>`)
	for i := range c.ordered {
		fmt.Fprintf(&b, `<w:num w:numId="%d"><w:abstractNumId w:val="1"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>`, i+2)
	}
	b.WriteString(`</w:numbering>`)
	return b.String()
}

// band writes a header or footer part: one paragraph with a center and a
// right tab stop holding the three cells, {{page}} and {{pages}} as PAGE and
// NUMPAGES fields.
func band(root, styleID string, cells [3]string) string {
	var b strings.Builder
	b.WriteString(xml.Header + `<w:` + root + ` xmlns:w="` + nsW + `" xmlns:r="` + nsR + `"><w:p><w:pPr><w:pStyle w:val="` + styleID + `"/>` +
		`<w:tabs><w:tab w:val="center" w:pos="` + strconv.Itoa(textWidth/2) + `"/><w:tab w:val="right" w:pos="` + strconv.Itoa(textWidth) + `"/></w:tabs></w:pPr>`)
	for i, cell := range cells {
		if i > 0 {
			b.WriteString(`<w:r><w:tab/></w:r>`)
		}
		for _, part := range renderq.SplitPlaceholders(cell) {
			switch part {
			case renderq.PagePlaceholder:
				b.WriteString(field("PAGE"))
			case renderq.PagesPlaceholder:
				b.WriteString(field("NUMPAGES"))
			default:
				b.WriteString(`<w:r><w:t xml:space="preserve">` + escape(part) + `</w:t></w:r>`)
			}
		}
	}
	b.WriteString(`</w:p></w:` + root + `>`)
	return b.String()
}

// field is a complex field with a cached result of 1, which Word and
// LibreOffice update when they lay out the pages.
func field(instr string) string {
	return `<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> ` + instr +
		` </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>1</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>`
}

// coreProps names the document's title and language, which Word shows in
// its properties and screen readers announce (the language also in
// styles' default run properties, where Word takes it from).
func coreProps(title, lang string) string {
	return xml.Header + `<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ` +
		`xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" ` +
		`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><dc:title>` + escape(title) + `</dc:title>` +
		`<dc:creator>OpenCRM</dc:creator><dc:language>` + escape(lang) + `</dc:language></cp:coreProperties>`
}
