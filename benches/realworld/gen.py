#!/usr/bin/env python3
"""Inputs of the real-program workloads: an XML catalogue and an XSLT that sorts,
groups and formats it (xalan), and SVG drawings with gradients, text and paths
(batik). Usage: gen.py OUT_DIR"""
import os, random, sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rnd = random.Random(7)

with open(os.path.join(out, "catalog.xml"), "w") as f:
    f.write("<catalog>\n")
    for i in range(40000):
        f.write(f'<item id="{i}" group="g{rnd.randrange(200)}"><name>item {i} {rnd.random():.6f}</name>'
                f'<price>{rnd.randrange(1, 100000) / 100}</price><tags>{" ".join(str(rnd.randrange(50)) for _ in range(5))}</tags></item>\n')
    f.write("</catalog>\n")

with open(os.path.join(out, "catalog.xsl"), "w") as f:
    f.write("""<?xml version="1.0"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:key name="by-group" match="item" use="@group"/>
  <xsl:template match="/">
    <html><body>
      <xsl:for-each select="catalog/item[generate-id() = generate-id(key('by-group', @group)[1])]">
        <xsl:sort select="@group"/>
        <h2><xsl:value-of select="@group"/>: <xsl:value-of select="format-number(sum(key('by-group', @group)/price), '#,##0.00')"/></h2>
        <table>
          <xsl:for-each select="key('by-group', @group)">
            <xsl:sort select="price" data-type="number" order="descending"/>
            <tr><td><xsl:value-of select="translate(name, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')"/></td>
                <td><xsl:value-of select="concat(substring-before(tags, ' '), '/', string-length(tags))"/></td></tr>
          </xsl:for-each>
        </table>
      </xsl:for-each>
    </body></html>
  </xsl:template>
</xsl:stylesheet>
""")

for n in range(12):
    with open(os.path.join(out, f"drawing{n}.svg"), "w") as f:
        f.write('<svg xmlns="http://www.w3.org/2000/svg" width="800" height="600">\n<defs>')
        for g in range(20):
            f.write(f'<radialGradient id="g{g}"><stop offset="0" stop-color="#{rnd.randrange(1 << 24):06x}"/>'
                    f'<stop offset="1" stop-color="#{rnd.randrange(1 << 24):06x}" stop-opacity="0.3"/></radialGradient>')
        f.write("</defs>\n")
        for s in range(1500):
            x, y, r = rnd.randrange(800), rnd.randrange(600), rnd.randrange(2, 60)
            kind = rnd.randrange(3)
            if kind == 0:
                f.write(f'<circle cx="{x}" cy="{y}" r="{r}" fill="url(#g{rnd.randrange(20)})"/>\n')
            elif kind == 1:
                pts = " ".join(f"{rnd.randrange(800)},{rnd.randrange(600)}" for _ in range(6))
                f.write(f'<path d="M {pts} Z" fill="none" stroke="#{rnd.randrange(1 << 24):06x}" stroke-width="2"/>\n')
            else:
                f.write(f'<text x="{x}" y="{y}" font-size="{r}" transform="rotate({rnd.randrange(360)} {x} {y})">jscope {s}</text>\n')
        f.write("</svg>\n")
