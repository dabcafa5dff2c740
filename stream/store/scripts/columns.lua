-- Helpers shared by the scripts that take per-player columns (spliced in by stream/store/scripts/__init__.py).
-- words(text):           the space-separated words of text
-- pieces(lengths, blob): blob cut into consecutive pieces of the given space-separated byte lengths
local function words(text)
  local out = {}
  for word in string.gmatch(text, '%S+') do out[#out + 1] = word end
  return out
end

local function pieces(lengths, blob)
  local out, pos = {}, 1
  for n in string.gmatch(lengths, '%d+') do
    local stop = pos + tonumber(n)
    out[#out + 1] = string.sub(blob, pos, stop - 1)
    pos = stop
  end
  return out
end
